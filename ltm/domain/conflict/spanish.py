"""Spanish patterns: a statement clause -> claims.

Spanish drops the subject ("Vivo en Sevilla"): the speaker is read off the verb's ending or its
clitic ("me gusta" -> the speaker, "usamos" / "nos mudamos" -> we); a name or "mi hermana" before
the verb is another subject. Values are normalised here: accents off (ñ to n too), articles and time
phrases cut, common nouns to their English canonical form ("té verde" -> "green tea", "comida
tailandesa" -> "thai food"), so the shared lexicon's kinds of thing (drinks, pets, sports...) apply.
"""

from __future__ import annotations

import re
import unicodedata

from .lexicon import JOB_WORDS, Claim, category_of, consumed, diet_of, english_places
from .reader import Reader

# --------------------------------------------------------------------------------------------
# detection: Spanish cues, never an English sentence
# --------------------------------------------------------------------------------------------

_ES_CHARS = re.compile(r"[ñáéíóúü¿¡]")
_VI_LETTERS = re.compile(r"[ăâđêôơư\u1ea0-\u1ef9]")
# fmt: off
_ES_CUES = frozenset(
    "yo vivo vive vivimos viven ya gusta gustan encanta encantan prefiero prefiere preferimos ahora tengo "
    "tiene tenemos soy es somos son estoy esta estamos trabajo trabaja trabajamos uso usa usamos bebo tomo "
    "fumo hablo llamo nombre anos nuestro nuestra tambien pero muy solia antes odio cambiamos nos del los "
    "las una unos que en el la mi mis al para con hermano hermana mujer marido desde juego deje".split()
)
_EN_CUES = frozenset(
    "i we you he she they my our your his her their the an is am are was were be been to in on at of and "
    "for with it this that not do does did don't have has had like love use used work live prefer drink "
    "eat speak moved switched going will would can from".split()
)
# fmt: on


def _fold(s: str) -> str:
    """Accents off (ñ -> n too): one character for one, so positions in the clause still hold."""
    return "".join(unicodedata.normalize("NFD", c)[0] if c.isalpha() else c for c in s)


def detects(clause: str) -> bool:
    """More Spanish cue words than English ones, or a Spanish letter (ñ, an acute accent, ¿ ¡) and at
    least as many: "I moved to Zürich" and "my friends come to my café" stay English. Never a clause
    with a Vietnamese letter (the Vietnamese reader is tried first)."""
    if _VI_LETTERS.search(clause):
        return False
    words = re.findall(r"[a-z']+", _fold(clause))
    es = sum(1 for w in words if w in _ES_CUES or w in _VERB_CUES)
    en = sum(1 for w in words if w in _EN_CUES)
    return es >= en if _ES_CHARS.search(clause) else es > en


# --------------------------------------------------------------------------------------------
# values
# --------------------------------------------------------------------------------------------

# fmt: off
_NOUNS = {
    "te": "tea", "cafe": "coffee", "cerveza": "beer", "vino": "wine", "agua": "water", "leche": "milk",
    "zumo": "juice", "jugo": "juice", "refresco": "soda", "comida": "food", "cocina": "food",
    "pizza": "pizza", "sushi": "sushi", "pasta": "pasta", "fideos": "noodles", "arroz": "rice",
    "hamburguesa": "burger", "carne": "meat", "cerdo": "pork", "ternera": "beef", "pollo": "chicken",
    "pescado": "fish", "marisco": "seafood", "mariscos": "seafood", "chocolate": "chocolate",
    "helado": "ice cream", "ensalada": "salad", "filete": "steak", "perro": "dog", "gato": "cat",
    "conejo": "rabbit", "loro": "parrot", "futbol": "football", "baloncesto": "basketball",
    "tenis": "tennis", "senderismo": "hiking", "natacion": "swimming", "nadar": "swimming",
    "nadando": "swimming", "correr": "running", "corriendo": "running", "ciclismo": "cycling",
    "escalada": "climbing", "esqui": "skiing", "yoga": "yoga", "golf": "golf", "musica": "music",
    "jazz": "jazz", "rock": "rock", "pop": "pop", "hermano": "brother", "hermana": "sister",
    "verano": "summer", "invierno": "winter", "primavera": "spring", "otono": "autumn",
    "profesor": "teacher", "profesora": "teacher", "maestro": "teacher", "maestra": "teacher",
    "ingeniero": "engineer", "ingeniera": "engineer", "medico": "doctor", "medica": "doctor",
    "enfermero": "nurse", "enfermera": "nurse", "abogado": "lawyer", "abogada": "lawyer",
    "programador": "programmer", "programadora": "programmer", "desarrollador": "developer",
    "desarrolladora": "developer", "disenador": "designer", "disenadora": "designer",
    "estudiante": "student", "camarero": "waiter", "camarera": "waiter", "cocinero": "cook",
    "cocinera": "cook", "periodista": "journalist", "contable": "accountant", "arquitecto": "architect",
    "arquitecta": "architect", "cientifico": "scientist", "cientifica": "scientist",
    "investigador": "researcher", "investigadora": "researcher", "gerente": "manager",
    "traductor": "translator", "traductora": "translator", "fotografo": "photographer",
    "fotografa": "photographer", "dentista": "dentist", "farmaceutico": "pharmacist",
    "farmaceutica": "pharmacist", "piloto": "pilot", "conductor": "driver", "conductora": "driver",
}
_ADJECTIVES = {
    "verde": "green", "negro": "black", "rojo": "red", "azul": "blue", "amarillo": "yellow",
    "blanco": "white", "italiana": "italian", "italiano": "italian", "tailandesa": "thai",
    "tailandes": "thai", "china": "chinese", "chino": "chinese", "japonesa": "japanese",
    "japones": "japanese", "mexicana": "mexican", "mexicano": "mexican", "india": "indian",
    "indio": "indian", "francesa": "french", "frances": "french", "espanola": "spanish",
    "espanol": "spanish", "coreana": "korean", "coreano": "korean", "menor": "younger",
    "mayor": "older", "pequeno": "younger", "pequena": "younger", "clasica": "classical",
    "descafeinado": "decaf", "software": "software",
}
# Spanish names of places whose English name differs (folded): "Vivo en Londres" and "I live in
# London" are one city, for a speaker who writes in both.
_PLACES = {
    "londres": "london", "nueva york": "new york", "lisboa": "lisbon", "roma": "rome", "pekin": "beijing",
    "moscu": "moscow", "colonia": "cologne", "florencia": "florence", "venecia": "venice",
    "napoles": "naples", "turin": "turin", "ginebra": "geneva", "bruselas": "brussels", "atenas": "athens",
    "varsovia": "warsaw", "praga": "prague", "viena": "vienna", "copenhague": "copenhagen",
    "estocolmo": "stockholm", "tokio": "tokyo", "seul": "seoul", "el cairo": "cairo", "estambul": "istanbul",
    "la haya": "the hague", "edimburgo": "edinburgh", "nueva delhi": "new delhi",
    "sevilla": "seville", "cataluna": "catalonia", "andalucia": "andalusia",
    "alemania": "germany", "francia": "france", "inglaterra": "england", "espana": "spain", "japon": "japan",
    "estados unidos": "united states", "reino unido": "united kingdom", "brasil": "brazil",
    "italia": "italy", "suiza": "switzerland", "suecia": "sweden", "paises bajos": "netherlands",
    "holanda": "netherlands",
}
_MONTHS = "enero|febrero|marzo|abril|mayo|junio|julio|agosto|septiembre|setiembre|octubre|noviembre|diciembre"
_DAYS = "lunes|martes|miercoles|jueves|viernes|sabados?|domingos?"
# fmt: on
_LEAD_WORDS = re.compile(
    r"^(?:el|la|los|las|lo|un|una|unos|unas|mi|mis|tu|tus|su|sus|nuestro|nuestra|nuestros|nuestras|al|del|de|a|"
    r"muy|mas|mucho|muchisimo|bastante|tambien|solo|sobre todo|bien|un poco de|algo de)\s+"
)
_TRAIL = re.compile(
    r"\s+(?:ahora|ya|tambien|tampoco|todavia|aun|hoy|manana|ayer|ahora mismo|ultimamente|actualmente|a veces|"
    r"siempre|mucho|muchisimo|bastante|un monton|mas|de nuevo|otra vez|al dia|a diario|de momento|por ahora|"
    r"por la (?:manana|tarde|noche)|cada (?:dia|manana|tarde|noche|semana|mes|ano)|todos los (?:dias|meses|anos)|"
    r"todas las (?:mananas|tardes|noches|semanas)|(?:todos )?los fines de semana|el fin de semana|"
    rf"(?:todos )?(?:los|el) (?:{_DAYS})|(?:el|este|esta|la|el proximo|la proxima) (?:mes|ano|semana)"
    r"(?: (?:pasado|pasada|que viene|proximo|proxima))?|(?:el|la) (?:mes|ano|semana) (?:pasado|pasada)|"
    rf"en (?:{_MONTHS}|\d{{4}}|verano|invierno|primavera|otono|casa)|desde .+|hace .+|con fluidez|bien|"
    r"en el trabajo|sin parar|de vez en cuando)$"
)
_STOP = re.compile(
    r"\s+(?:porque|pero|aunque|para|por|desde|hasta|con|cuando|donde|mientras|si|sino|que|y luego)\s+|[,;:()]"
)
_PREFER_STOP = re.compile(r"\s+(?:al|a la|a los|a las|a|antes que|mas que|en vez de|en lugar de|sobre|que)\s+")
_ITEMS = re.compile(r"\s*,\s*|\s+(?:y|e|o|u|ni)\s+")


def _word(w: str) -> str:
    if w in _NOUNS:
        return _NOUNS[w]
    for cut in ("es", "s"):
        if w.endswith(cut) and w[: -len(cut)] in _NOUNS:
            return _NOUNS[w[: -len(cut)]]
    return _ADJECTIVES.get(w, w)


def _canon(raw: str, reorder: bool = True) -> str:
    """One value: folded, articles and time phrases off, head noun last and in English if known."""
    v = _fold(raw).strip(" ,.;:!?¿¡'\"")
    for _ in range(4):
        v2 = _TRAIL.sub("", _LEAD_WORDS.sub("", v)).strip(" ,.;:!?")
        if v2 == v:
            break
        v = v2
    words = v.split()
    if not reorder or not words:
        return v
    head = words[0]
    rest = [w for w in words[1:] if w not in ("de", "del", "con")]
    if _word(head) != head and head not in _ADJECTIVES and rest and len(rest) <= 2:
        # "te verde" -> "green tea", "leche de avena" -> "avena milk", "ingeniera de software"
        return " ".join([*(_word(w) for w in rest), _word(head)])
    return " ".join(_word(w) for w in words)


def _values(raw: str, multi: bool, reorder: bool = True, prefer: bool = False) -> list[str]:
    raw = _fold(raw)
    if prefer:
        raw = _PREFER_STOP.split(raw, maxsplit=1)[0]
    head = _STOP.split(raw, maxsplit=1)[0] if not multi else re.split(r"[;:()]|\s+(?:porque|pero|aunque)\s+", raw)[0]
    if multi:
        head = re.split(r"\s+(?:para|por|cuando|donde|mientras|desde)\s+", head, maxsplit=1)[0]
    items = _ITEMS.split(head) if multi else [head]
    out = [_canon(x, reorder) for x in items]
    return [x for x in out if x and any(c.isalnum() for c in x)][:5]


# --------------------------------------------------------------------------------------------
# subjects
# --------------------------------------------------------------------------------------------

_ADVERBIAL = re.compile(
    r"\b(?:ahora|ya|tambien|antes|hoy|ultimamente|actualmente|todavia|aun|siempre|nunca|no|si|pues|bueno|"
    r"en realidad|de hecho|la verdad|sin embargo|por cierto|ademas|este ano|esta semana|este mes|"
    r"el (?:ano|mes) pasado|la semana pasada|por la (?:manana|tarde|noche)|a veces|normalmente|"
    rf"(?:todos )?los (?:{_DAYS}|fines de semana)|el fin de semana|cada \w+|en \d{{4}}|en (?:{_MONTHS})|"
    r"desde hace \w+ \w+|al final|finalmente|de nuevo|otra vez|tambien|solo|oficialmente|y|pero|o)\b"
)


def _subject(prefix: str, verb: str, clitic: str) -> str:
    """Who a clause is about: a subject said before the verb, else the verb's clitic or person.
    ``verb`` keeps its accents (mudé is the speaker, mudó is someone else)."""
    p = _ADVERBIAL.sub(" ", _fold(prefix))
    p = " ".join(p.replace(",", " ").split())
    if p == "yo":
        return "self"
    if re.search(r"\b(?:nosotros|nosotras|nuestro equipo|nuestra empresa|el equipo|mi equipo|la empresa)\b", p):
        return "we"
    if p and len(p.split()) <= 3:
        return p
    if clitic == "me":
        return "self"
    if clitic == "nos":
        return "we"
    v = verb.split()[0] if verb else ""
    if v in ("me", "nos"):  # "me llamo", "nos casamos"
        return "self" if v == "me" else "we"
    if v.endswith("mos"):
        return "we"
    if clitic or v.endswith("ó"):
        return ""
    if v.endswith(("é", "í")) or _fold(v) in ("soy", "estoy", "voy") or _fold(v).endswith(("o", "ia", "aba")):
        return "self"  # 1st person singular: vivo, dejé, viví, soy, vivía, trabajaba
    return ""


# --------------------------------------------------------------------------------------------
# patterns
# --------------------------------------------------------------------------------------------

_NEG = r"(?P<neg>\b(?:ya no|no|nunca|jamas|tampoco)\s+)?"
_CL = r"(?:\b(?P<cl>me|nos|te|se|le|les)\s+)?"


def _es(verbs: str, tail: str, attribute: str, *, neg: bool = True, clitic: bool = False, **kw: object):
    head = (_NEG if neg else "") + (_CL if clitic else "") + r"\b(?P<v>" + verbs + r")\b"
    return (re.compile(head + tail), attribute, kw)


_VAL = r"\s+(?P<val>.+)"

# fmt: off
_RULES = (
    _es(r"me llamo|me llaman|llamame|me dicen", _VAL, "name", neg=False),
    _es(r"vivi|vivia|viviamos|he vivido|hemos vivido", r"\s+en" + _VAL, "past_location"),
    _es(r"vivo|vives|vive|vivimos|viven|vivir|viviendo|resido|reside|residimos|residir", r"\s+(?:en|a)" + _VAL,
        "location"),
    _es(r"(?:he |hemos |ha |voy a |vamos a |va a )?(?:mude|mudo|mudamos|mudo|mudaron|mudado|mudar|mudarme|"
        r"mudarnos|traslade|trasladamos|trasladado|trasladarme)", r"\s+(?:a|al|para)" + _VAL, "location",
        clitic=True),
    _es(r"fui a vivir|fuimos a vivir|me fui a vivir|nos fuimos a vivir", r"\s+(?:a|al|en)" + _VAL, "location"),
    _es(r"naci|nacio|creci|crecio|me crie", r"\s+en" + _VAL, "origin", neg=False),
    _es(r"soy|es|somos|vengo|viene|venimos", r"\s+de" + _VAL, "origin"),
    _es(r"trabajo|trabaja|trabajamos|trabajaba|trabajar|trabajando", r"\s+(?:como|de)" + _VAL, "role"),
    _es(r"trabajo|trabaja|trabajamos|trabajaba|trabajar|trabajando", r"\s+con" + _VAL, "use", multi=True),
    _es(r"trabajo|trabaja|trabajamos|trabajaba|trabajar|trabajando", r"\s+(?:en|para)" + _VAL, "employer"),
    _es(r"entre|me uni|empece|empiezo|me contrataron", r"\s+(?:en|a|al)" + _VAL, "employer"),
    _es(r"tengo|tiene|tenemos|tenia|tener", r"\s+(?P<val>\d{1,3})\s+anos\b", "age"),
    _es(r"cumpli|cumplo|cumplire|voy a cumplir|cumplio|acabo de cumplir|cumplir", r"\s+(?P<val>\d{1,3})\b", "age",
        neg=False),
    _es(r"soy|estoy|es|esta|era|estaba|ser|estar|sigo",
        r"\s+(?:\w+\s+)?(?P<val>casad[oa]s?|solter[oa]s?|divorciad[oa]s?|comprometid[oa]s?|viud[oa]s?|"
        r"separad[oa]s?)\b", "marital"),
    _es(r"me case|nos casamos|se caso|me divorcie|nos divorciamos|se divorcio|me comprometi|nos comprometimos|"
        r"me separe|nos separamos", r"(?P<val>)", "marital_event"),
    _es(r"soy|es|era|ser|somos|sigo siendo|me hice|me he hecho",
        r"\s+(?:un[oa]?\s+)?(?:estrictamente\s+|totalmente\s+)?(?P<val>vegetarian[oa]s?|vegan[oa]s?|"
        r"pescetarian[oa]s?)\b", "diet"),
    _es(r"soy|es|era|somos", r"\s+(?:muy\s+)?alergic[oa]s?\s+(?:a|al)" + _VAL, "allergy", multi=True),
    _es(r"tengo|tiene|tenemos", r"\s+alergia\s+(?:a|al)" + _VAL, "allergy", multi=True),
    _es(r"gusta mas|gustan mas|prefiero|prefiere|preferimos|prefieren|preferia|preferir", _VAL, "affinity",
        clitic=True, strength="prefer"),
    _es(r"odio|odia|odiamos|detesto|detesta|aborrezco|disgusta|disgustan", _VAL, "affinity", clitic=True,
        multi=True, positive=False),
    _es(r"soporto|aguanto", _VAL, "hate_neg", multi=True),
    _es(r"gusta|gustan|gustaba|gustaban|encanta|encantan|encantaba|encantaban|fascina|fascinan|apasiona|"
        r"apasionan|chifla|chiflan", r"(?:\s+(?:mucho|muchisimo|bastante|un monton))?" + _VAL, "affinity",
        clitic=True, multi=True),
    _es(r"adoro|adora|amo|ama|disfruto|disfruta|disfrutamos", r"(?:\s+de(?=\s))?" + _VAL, "affinity", multi=True),
    _es(r"(?:he |hemos |ha )?(?:cambie|cambiamos|cambio|cambiado|pase|pasamos|paso|pasado|migre|migramos|migro|"
        r"migrado)", r"(?:\s+de\s+(?P<old>.+?))?\s+(?:a|al)" + _VAL, "use", clitic=True, strength="switch"),
    _es(r"uso|usas|usa|usamos|usan|usaba|usabamos|usar|utilizo|utiliza|utilizamos|utilizar|elegimos|elegi|"
        r"escogimos|escogi|programo|programamos|programar|desplegamos|despliego", r"(?:\s+en)?" + _VAL, "use",
        multi=True),
    _es(r"abandone|abandonamos|elimine|desinstale|desinstalamos", _VAL, "use", neg=False, positive=False),
    _es(r"como|comes|come|comemos|comer|comia|comiamos",
        r"\s+(?P<val>(?:carne|cerdo|ternera|res|pollo|pescado|marisco|mariscos)\b.*)", "diet_meat"),
    _es(r"bebo|bebes|bebe|bebemos|beber|bebia|tomo|tomas|toma|tomamos|tomar|tomaba|como|come|comemos|comer|comia",
        _VAL, "consume", multi=True),
    _es(r"fumo|fumas|fuma|fumamos|fumar|fumaba|fumando", r"(?P<val>)", "smoke"),
    _es(r"hablo|habla|hablamos|hablar|hablaba", r"(?:\s+(?:un poco de|algo de|bien|con fluidez))?" + _VAL,
        "speaks", multi=True),
    _es(r"estoy aprendiendo|estamos aprendiendo|aprendo|aprendemos|estoy estudiando|estudio",
        _VAL, "plan_learn", multi=True),
    _es(r"quiero|queremos|pienso|planeo|planeamos|voy a|vamos a|tengo pensado|me gustaria",
        r"\s+(?P<verb>aprender|estudiar|comprar|empezar|vender|adoptar|probar)" + _VAL, "plan"),
    _es(r"juego|juega|jugamos|jugar|jugaba|practico|practica|practicamos|practicar",
        r"\s+(?:al|a la|a|el)?\s*(?P<val>.+)", "plays", multi=True),
    _es(r"tengo|tiene|tenemos|tenia|tener",
        r"\s+(?P<num>\d+|dos|tres|cuatro|cinco|seis|ningun|ninguna)" + _VAL, "count"),
    _es(r"tengo|tiene|tenemos|tenia|tener|adopte|adoptamos",
        r"\s+(?:un|una|uno)?\s*(?!que\b|hambre|sed\b|sueno|frio|calor|miedo|ganas|razon|prisa|tiempo|\d)(?P<val>.+)",
        "has", multi=True),
    _es(r"voy a ir|vamos a ir|voy a viajar|vamos a viajar|viajo|viajamos|viajare|ire|iremos|voy|vamos|vuelo|"
        r"volamos|me voy|nos vamos", r"\s+(?:a|al|para)" + _VAL, "travel"),
    _es(r"soy|somos|es|era|ser", r"\s+(?:un|una)?\s*(?P<val>.+)", "is_a"),
)
# fmt: on
# Spanish words English does not have (or not as a word of its own): the cue words, plus every verb
# form the patterns read ("disfruto", "voy"), less the few English homographs.
_EN_HOMOGRAPHS = frozenset("come son era ire pare amo ama me use has a he case ha ir".split())
_VERB_CUES = (
    frozenset(
        w
        for pattern, _attr, _kw in _RULES
        for w in re.findall(
            r"[a-z]{2,}",
            re.sub(r"\(\?P<\w+>|\\[swbd]|\(\?[:=!]", " ", pattern.pattern.split("(?P<v>")[-1].split(")\\b")[0]),
        )
    )
    - _EN_HOMOGRAPHS
)
_MARITAL = {"casad": "married", "solter": "single", "divorciad": "divorced", "comprometid": "engaged",
            "viud": "widowed", "separad": "separated"}  # fmt: skip
_MARITAL_EVENT = {"cas": "married", "divorci": "divorced", "compromet": "engaged", "separ": "separated"}
_PLAN_VERB = {"aprender": "learn", "estudiar": "study", "comprar": "buy", "empezar": "start", "vender": "sell",
              "adoptar": "adopt", "probar": "try"}  # fmt: skip
_NUM = {"dos": "2", "tres": "3", "cuatro": "4", "cinco": "5", "seis": "6"}
_SCHEDULE = (
    "reunion|cita|entrevista|vuelo|examen|boda|cena|fiesta|lanzamiento|entrega|fecha limite|plazo|clase|demo|"
    "presentacion|partido|concierto|viaje|evento|revision|llamada|daily|standup|comida|salida"
)
_THE = re.compile(
    rf"^(?:el|la|los|las|nuestra|nuestro|mi)\s+(?P<attr>(?:{_SCHEDULE})(?:\s+\w+)?)\s+"
    r"(?:(?:se\s+)?(?:movio|cambio|paso|pospuso|aplazo|adelanto|retraso|traslado|ha movido|ha cambiado|ha pasado|"
    r"ha pospuesto|ha aplazado|ha adelantado)|(?:fue|ha sido|ha quedado|quedo|queda)\s+(?:movid[oa]|cambiad[oa]|"
    r"pospuest[oa]|aplazad[oa]|adelantad[oa]|fijad[oa]|programad[oa])|sigue siendo|es|sera|esta|esta programad[oa]|"
    r"esta fijad[oa])\s+(?:para\s+|a\s+|al\s+|hasta\s+|en\s+)?(?P<val>.+)$"
)
_POSSESSIVE = re.compile(
    r"^(?P<owner>mi|mis|nuestro|nuestra|nuestros|nuestras|tu|tus)\s+(?P<attr>\w+(?:\s+\w+){0,2}?)\s+"
    r"(?P<neg>no\s+)?(?:es|son|era|eran|sera|ahora es|es ahora|sigue siendo|se llama)\s+(?P<val>.+)$"
)
_ATTR = {"nombre": "name", "edad": "age", "trabajo": "role", "profesion": "role", "puesto": "role",
         "cargo": "role", "oficio": "role", "empresa": "employer", "casa": "location", "direccion": "location",
         "ciudad": "location", "cumpleanos": "attr:birthday"}  # fmt: skip
_QUIT = re.compile(
    r"\b(?:ya\s+)?(?P<q>deje|dejo|dejamos|he dejado|hemos dejado|ha dejado|pare|paramos)\s+de\s+(?=\w+(?:ar|er|ir)\b)"
)
_QUIT_OBJECT = re.compile(r"\b(?:deje|dejamos|he dejado|hemos dejado|ha dejado)\s+(?:el|la|los|las)\s+(?P<val>.+)")


# "se canceló mi viaje a Oslo", "cancelé el viaje a Lima", "mi viaje a Oslo se canceló": a trip called off
# (matched on the folded text: no accents)
_TRIP_ES = r"(?:mi|nuestro|el)\s+(?:viaje|vuelo|visita|vacaciones)\s+(?:a|al|para)\s+(?P<val>.+?)"
_CALLED_OFF = (
    re.compile(
        rf"^(?:se\s+(?:cancelo|suspendio|aplazo|pospuso)|cancele|cancelamos|suspendi|aplace|pospuse)\s+{_TRIP_ES}$"
    ),
    re.compile(rf"^{_TRIP_ES}\s+(?:se\s+cancelo|se\s+suspendio|se\s+aplazo|esta\s+cancelado|fue\s+cancelado)$"),
)

# "… a Oslo de la semana que viene": when the trip was to be, not where
_WHEN_OF = re.compile(
    r"\s+(?:de|del|para)\s+(?:(?:la|el)\s+)?(?:semana|mes|ano|verano|invierno|fin de semana|proxim[oa])\b.*$"
)


def _read(clause: str, inherited: str) -> list[Claim]:
    c = _fold(clause)
    anywhere = bool(re.search(r"\bya no\b", c))
    m = _CALLED_OFF[0].match(c) or _CALLED_OFF[1].match(c)
    if m and (vals := _values(_WHEN_OF.sub("", m.group("val")), False, reorder=False)):
        return [Claim("we" if "nuestro" in c or c.endswith("mos") else "self", "travel", vals[0], False)]
    m = _THE.match(c)
    if m:
        return [Claim("", "the:" + m.group("attr"), v) for v in _values(m.group("val"), False, reorder=False)]
    m = _POSSESSIVE.match(c)
    if m and not re.search(r"\b(?:vive|trabaja|usa|tiene|prefiere)\b", m.group("attr")):
        owner = m.group("owner")
        subj = "self" if owner in ("mi", "mis") else "we" if owner.startswith("nuestr") else "you"
        attr = m.group("attr")
        fav = re.match(r"^(?P<what>\w+(?:\s+\w+)?)\s+(?:favorit[oa]s?|preferid[oa]s?)$", attr)
        positive = not m.group("neg")
        if fav:
            return [Claim(subj, "attr:favorite " + _canon(fav.group("what")), v, positive)
                    for v in _values(m.group("val"), False)]  # fmt: skip
        key = _ATTR.get(attr, "attr:" + attr)
        return [Claim(subj, key, v, positive) for v in _values(m.group("val"), False, reorder=key == "role")]
    quit_ = _QUIT.search(c)
    quit_person = ""
    if quit_:
        quit_person = clause[quit_.start("q") : quit_.end("q")]
        c = c[: quit_.start()] + c[quit_.end() :]
        clause = clause[: quit_.start()] + clause[quit_.end() :]
    else:
        mo = _QUIT_OBJECT.search(c)
        if mo:
            vals = _values(mo.group("val"), True)
            subj = _subject(c[: mo.start()], "dejé", "") or inherited
            if vals and vals[0] in ("tabaco", "cigarrillos", "cigarros"):
                return [Claim(subj, "smoke", "smoking", False)]
            return [Claim(subj, "consume" if category_of(v) in ("drink", "food") else "use", v, False) for v in vals]
    for pattern, attribute, kw in _RULES:
        m = pattern.search(c)
        if not m:
            continue
        gd = m.groupdict()
        verb = quit_person or (clause[m.start("v") : m.end("v")] if gd.get("v") is not None else "")
        subj = _subject(c[: m.start()], verb, gd.get("cl") or "") or inherited
        negated = bool(gd.get("neg")) or bool(quit_) or anywhere
        positive = bool(kw.get("positive", True)) != negated
        multi = bool(kw.get("multi"))
        strength = str(kw.get("strength", ""))
        attr = attribute
        if attr == "smoke":
            return [Claim(subj, "smoke", "smoking", positive)]
        if attr == "age":
            return [Claim(subj, "age", m.group("val"), positive)]
        if attr == "marital":
            val = next((e for s, e in _MARITAL.items() if m.group("val").startswith(s)), m.group("val"))
            return [Claim(subj, "marital", val, positive)]
        if attr == "marital_event":
            val = next((e for s, e in _MARITAL_EVENT.items() if s in m.group("v")), "married")
            return [Claim(subj, "marital", val, positive)]
        if attr == "diet":
            val = m.group("val")
            kind = "vegan" if val.startswith("vegan") else "pescatarian" if val.startswith("pesc") else "vegetarian"
            return [Claim(subj, "diet", kind, positive)]
        if attr == "diet_meat":
            return [Claim(subj, "diet", "vegetarian", not positive)]
        if attr == "count":
            num = m.group("num")
            vals = _values(m.group("val"), False)
            if not vals:
                continue
            if num.startswith("ningun"):
                return [Claim(subj, "has", vals[0], False)]
            return [Claim(subj, "count:" + vals[0], _NUM.get(num, num), positive)]
        if attr == "plan":
            verb_en = _PLAN_VERB[m.group("verb")]
            return [Claim(subj, "plan:" + verb_en, v, positive) for v in _values(m.group("val"), True)]
        if attr == "plan_learn":
            return [Claim(subj, "plan:learn", v, positive) for v in _values(m.group("val"), True)]
        if attr == "hate_neg":
            if not negated:
                continue
            return [Claim(subj, "affinity", v, False) for v in _values(m.group("val"), True)]
        reorder = attr not in ("name", "location", "past_location", "origin", "employer", "use", "travel")
        vals = _values(m.group("val"), multi, reorder=reorder, prefer=strength == "prefer")
        if not vals:
            continue
        if attr == "name":
            return [Claim(subj, "name", v) for v in vals]
        if attr == "employer" and re.match(r"^(?:casa|remoto|remota|equipo|un proyecto|proyecto)", vals[0]):
            continue
        if attr == "travel" and re.match(r"^\w+(?:ar|er|ir|arme|erme|irme)\b", vals[0]):
            continue
        if attr == "is_a":
            kind = "role" if vals[0].split()[-1] in JOB_WORDS else "is_a"
            return [Claim(subj, kind, vals[0], positive)]
        if attr == "use" and strength == "switch":
            claims = [Claim(subj, "use", v, positive, "switch") for v in vals]
            if gd.get("old"):
                claims += [Claim(subj, "use", v, False) for v in _values(m.group("old"), False, reorder=False)]
            return claims
        attr = consumed(attr, vals[0])
        if (diet := diet_of(subj, attr, vals[0], positive)) is not None:
            return [diet]
        return [Claim(subj, attr, v, positive, strength) for v in vals]
    return []


def claims_es(clause: str, inherited: str) -> list[Claim]:
    """The clause's claims; a place (where one lives, comes from, travels) by its English name."""
    return english_places(_read(clause, inherited), _PLACES)


READER = Reader(
    lang="es",
    claims=claims_es,
    detects=detects,
    lead=(
        r"^(?:(?:bueno|pues|oye|vale|en realidad|de hecho|la verdad es que|la verdad|por cierto|correccion|"
        r"corrección|actualizacion|actualización|perdon|perdón|ojo|recuerda que|recuerda|sí)[,:!]?\s+)+"
        # a time said first ("hoy en día trabajo en …", "desde el verano vivimos en …")
        r"|^(?:hoy en d[ií]a|en este momento|actualmente|[uú]ltimamente|ahora mismo|este a[ñn]o|este mes|"
        r"esta semana|desde (?:el |la |hace )?[a-zñáéíóú]+(?: pasad[oa])?)[,]?\s+"
    ),
    split=(
        r",?\s+pero\s+|\s+porque\s+|,\s+asi que\s+|,\s+así que\s+|\s+aunque\s+|"
        r",\s+(?=(?:ahora|antes|pero|yo|ya no)\b)|,?\s+y\s+(?=(?:ahora|ya no|antes)\b)"
    ),
    # "Antes vivía en Quito", "Solía fumar": a state that held and no longer does ("antes de" is not one)
    ended=(
        r"\b(?:antes|anteriormente|previamente|en el pasado|solía|solia|solíamos|soliamos|solían|solian),?\s+"
        r"(?!de\b|que\b)(?=\w)"
    ),
    negations=r"\b(?:nunca|jamás|jamas|tampoco|dejé de|deje de)\b",
)
