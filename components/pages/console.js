/*
 * Memory Console (LongTermMemory plugin page).
 *
 * Talks to the plugin only through the LangBot page SDK (`langbot.api`), which the host forwards
 * to the page component's handle_api. Every request carries the selected memory space
 * ({kb_id, session_name, bot_uuid, sender_id}); the server derives the keys itself.
 *
 * Stored text is data: everything from the server is rendered with textContent / text nodes,
 * never parsed as markup, and attributes are set one by one (no inline handlers).
 */
(function () {
  'use strict';

  var PAGE_SIZE = 20;

  var S = {
    ready: false,
    wired: false,
    meta: null,
    kbs: null,
    kbsError: '',
    scopes: null,
    scope: null, // the open memory space: {kb_id, session_name, bot_uuid, sender_id}
    derived: null, // keys of the last derive (Advanced)
    overview: null,
    tab: 'profiles',
    cache: {},
    ep: { mode: 'list', page: 1, query: '', status: 'active', speaker: '', from: '', until: '' },
    audit: { page: 1 },
    cand: { page: 1, all: false, tombPage: 1 },
    exportDoc: null,
    auditDoc: null,
    pending: {}, // confirmation state: action key -> true
  };

  // ------------------------------------------------------------------------------ helpers
  function $(id) { return document.getElementById(id); }

  function T(key, args) {
    var s = window.langbot && typeof langbot.t === 'function' ? langbot.t(key, key) : key;
    s = String(s);
    if (args) {
      s = s.replace(/\{(\w+)\}/g, function (m, k) { return args[k] != null ? String(args[k]) : m; });
    }
    return s;
  }

  // A translated label for a stored enum value; an unknown value is shown as itself.
  function TV(prefix, value) {
    var key = prefix + '.' + value;
    var s = T(key);
    return s === key ? String(value) : s;
  }

  function append(node, kids) {
    for (var i = 0; i < kids.length; i++) {
      var k = kids[i];
      if (k == null || k === false) continue;
      if (Array.isArray(k)) append(node, k);
      else if (typeof k === 'object' && k.nodeType) node.appendChild(k);
      else node.appendChild(document.createTextNode(String(k)));
    }
    return node;
  }

  // Build an element. props: text, className, on:{event: fn}, hidden, disabled, other attributes.
  function h(tag, props) {
    var node = document.createElement(tag);
    var p = props || {};
    Object.keys(p).forEach(function (k) {
      var v = p[k];
      if (v == null || v === false) return;
      if (k === 'text') node.textContent = String(v);
      else if (k === 'className') node.className = v;
      else if (k === 'on') Object.keys(v).forEach(function (ev) { node.addEventListener(ev, v[ev]); });
      else if (k === 'value') node.value = String(v);
      else if (/^on/i.test(k)) throw new Error('inline event handlers are not allowed');
      else node.setAttribute(k, v === true ? '' : String(v));
    });
    return append(node, Array.prototype.slice.call(arguments, 2));
  }

  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }
  function fill(node, kids) { return append(clear(node), kids); }
  function errText(e) { return e && e.message ? e.message : String(e); }
  function langCode() { return (window.langbot && langbot.language) || 'en-US'; }
  function langKey() { return /^zh/i.test(langCode()) ? 'zh_Hans' : 'en_US'; }
  function dash(v) { return v == null || v === '' ? '—' : String(v); }

  function fmtTime(iso) {
    if (!iso) return '—';
    var d = new Date(iso);
    if (isNaN(d.getTime())) return String(iso);
    try {
      return d.toLocaleString(langCode(), { dateStyle: 'medium', timeStyle: 'medium' });
    } catch (e) {
      return d.toISOString();
    }
  }

  function timeEl(iso) { return h('time', { datetime: iso || null, title: iso || null, text: fmtTime(iso) }); }

  function toIso(local) {
    if (!local) return '';
    var d = new Date(local);
    return isNaN(d.getTime()) ? '' : d.toISOString();
  }

  var toastTimer = null;
  function toast(text, bad) {
    var t = $('toast');
    t.textContent = text;
    t.className = 'small ' + (bad ? 'error' : 'ok-text');
    if (toastTimer) clearTimeout(toastTimer);
    toastTimer = setTimeout(function () { t.textContent = ''; t.className = 'small'; }, 8000);
  }

  // The host passes the component's PageResponse on as it is ({data, error}) in some versions and
  // unwraps it (data, or a rejection with error) in others: accept both, and make a refusal throw.
  function unwrap(v) {
    if (v && typeof v === 'object' && !Array.isArray(v) && 'error' in v &&
        Object.keys(v).every(function (k) { return k === 'data' || k === 'error'; })) {
      if (v.error) throw new Error(String(v.error));
      return v.data;
    }
    return v;
  }

  function call(endpoint, body, method) {
    var payload = Object.assign({ lang: langCode() }, body || {});
    if (S.scope && payload.scope === undefined) payload.scope = S.scope;
    return langbot.api(endpoint, payload, method || 'POST').then(unwrap);
  }

  function panel(name) { return $('panel-' + name); }
  function panelBody(name) { return panel(name).querySelector('.body'); }
  function panelError(name, message) {
    var box = panel(name).querySelector(':scope > .error');
    if (!box) return;
    box.textContent = message || '';
    box.hidden = !message;
  }

  // Run an action for a panel: busy state, errors shown in the panel (never a blank panel).
  function run(name, fn) {
    var p = panel(name);
    p.classList.add('busy');
    p.setAttribute('aria-busy', 'true');
    panelError(name, '');
    return Promise.resolve()
      .then(fn)
      .catch(function (e) { panelError(name, errText(e)); })
      .then(function () { p.classList.remove('busy'); p.removeAttribute('aria-busy'); });
  }

  function kv(rows) {
    var dl = h('dl', { className: 'kv' });
    rows.forEach(function (r) {
      if (!r) return;
      append(dl, [h('dt', { text: r[0] }), h('dd', { className: r[2] || null }, r[1])]);
    });
    return dl;
  }

  function statusBadge(status) {
    return h('span', { className: 'badge ' + status, 'data-status': status, text: TV('status', status) });
  }

  // Two-step confirmation inside the page (the host sandbox allows no modal dialogs).
  function confirmButton(key, label, confirmLabel, action, extra) {
    if (!S.pending[key]) {
      return h('button', {
        type: 'button', className: 'danger', 'data-action': key.split(':')[0], text: label,
        on: { click: function () { S.pending[key] = true; rerender(); } },
      });
    }
    var reason = h('input', {
      type: 'text', maxlength: '500', className: 'grow', 'data-role': 'reason',
      placeholder: T('action.reason_ph'), 'aria-label': T('action.reason_ph'),
    });
    return h('span', { className: 'row grow' },
      extra || null,
      reason,
      h('button', {
        type: 'button', className: 'danger confirm', 'data-action': 'confirm', text: confirmLabel,
        on: { click: function () { delete S.pending[key]; action(reason.value); } },
      }),
      h('button', {
        type: 'button', 'data-action': 'cancel', text: T('action.cancel'),
        on: { click: function () { delete S.pending[key]; rerender(); } },
      }));
  }

  // ------------------------------------------------------------------------------ downloads
  function download(filename, text) {
    var blob = new Blob([text], { type: 'application/json' });
    var url = URL.createObjectURL(blob);
    var a = h('a', { href: url, download: filename, hidden: true });
    document.body.appendChild(a);
    a.click();
    setTimeout(function () { a.remove(); URL.revokeObjectURL(url); }, 2000);
  }

  function copyText(area) {
    area.focus();
    area.select();
    var ok = false;
    try { ok = document.execCommand('copy'); } catch (e) { ok = false; }
    if (ok) { toast(T('dl.copied')); return; }
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(area.value).then(
        function () { toast(T('dl.copied')); },
        function () { toast(T('dl.copy_failed'), true); });
    } else {
      toast(T('dl.copy_failed'), true);
    }
  }

  // A downloadable JSON document: Download (Blob, same-origin) + Copy + the text itself, because
  // a sandboxed host frame may block downloads.
  function documentBox(kind, filename, doc, summary) {
    var text = JSON.stringify(doc, null, 2);
    var area = h('textarea', { readonly: true, rows: '12', className: 'mono', 'data-role': 'json', 'aria-label': filename });
    area.value = text;
    return h('div', { className: 'card stack', 'data-doc': kind },
      h('h3', { text: T('dl.ready', { name: filename }) }),
      summary,
      h('div', { className: 'row' },
        h('button', { type: 'button', className: 'primary', 'data-action': 'download', text: T('dl.download'),
          on: { click: function () { download(filename, text); toast(T('dl.started', { name: filename })); } } }),
        h('button', { type: 'button', 'data-action': 'copy', text: T('dl.copy'),
          on: { click: function () { copyText(area); } } }),
        h('span', { className: 'small muted', text: T('dl.hint') })),
      area);
  }

  // ------------------------------------------------------------------------------ sidebar
  function formScope() {
    return {
      kb_id: $('kb-select').value || '',
      session_name: $('f-session').value.trim(),
      bot_uuid: $('f-bot').value.trim(),
      sender_id: $('f-sender').value.trim(),
    };
  }

  function renderKbs() {
    var sel = $('kb-select');
    var current = sel.value;
    var opts = [h('option', { value: '', text: T('space.kb_none') })];
    (S.kbs || []).forEach(function (kb) {
      opts.push(h('option', { value: kb.kb_id, text: T('space.kb_option', { kb: kb.kb_id, isolation: TV('iso', (kb.isolation || 'session')) }) }));
    });
    fill(sel, opts);
    if (current && (S.kbs || []).some(function (k) { return k.kb_id === current; })) sel.value = current;
    else if (!current && S.kbs && S.kbs.length === 1) sel.value = S.kbs[0].kb_id;
  }

  function sourceLabel(src) { return TV('src', src); }

  function renderScopes() {
    var list = $('scope-list');
    var box = $('scopes-error');
    box.textContent = S.scopesError || '';
    box.hidden = !S.scopesError;
    if (!S.scopes) { fill(list, []); fill($('bot-list'), []); return; }
    var items = S.scopes.scopes.map(function (s) {
      var current = S.scope && S.scope.session_name === s.session_name && S.scope.bot_uuid === s.bot_uuid;
      return h('li', null, h('button', {
        type: 'button', 'data-session': s.session_name, 'aria-current': current ? 'true' : null,
        on: { click: function () { pickScope(s.session_name, s.bot_uuid); } },
      },
      h('span', { className: 'mono', text: s.session_name }),
      h('span', { className: 'small muted', text: s.bot_uuid ? T('space.bot_label', { bot: s.bot_uuid }) : T('space.no_bot') }),
      h('span', null, s.sources.map(function (src) { return h('span', { className: 'badge', text: sourceLabel(src) }); }))));
    });
    if (!items.length) items = [h('li', { className: 'empty', text: T('space.none_known') })];
    fill(list, items);
    var bots = S.scopes.bots.map(function (b) {
      return h('button', {
        type: 'button', className: 'link', 'data-bot': b.bot_uuid,
        on: { click: function () { pickBot(b.bot_uuid); } },
      }, T('space.bot_wide', { bot: b.bot_uuid }));
    });
    fill($('bot-list'), bots.length ? [h('div', { className: 'small muted', text: T('space.bots') }), bots] : []);
  }

  function pickScope(session, bot) {
    $('f-session').value = session;
    $('f-bot').value = bot || '';
    $('f-sender').value = '';
    openScope();
  }

  function pickBot(bot) {
    $('f-bot').value = bot;
    $('f-session').value = '';
    $('f-session').focus();
    $('space-status').textContent = T('space.enter_session');
  }

  function spaceError(message) {
    $('space-error').textContent = message || '';
    $('space-error').hidden = !message;
  }

  function loadKbs() {
    return call('/kbs', {}, 'GET').then(function (d) {
      S.kbs = d.knowledge_bases || [];
      renderKbs();
    }, function (e) { spaceError(errText(e)); });
  }

  function loadScopes() {
    return call('/scopes', {}, 'GET').then(function (d) {
      S.scopes = d;
      S.scopesError = '';
      renderScopes();
    }, function (e) { S.scopesError = errText(e); renderScopes(); });
  }

  function loadMeta() {
    return call('/meta', {}, 'GET').then(function (d) {
      S.meta = d;
      var cand = document.querySelector('[data-tab="candidates"]');
      cand.hidden = !(d.features && d.features.candidates);
      var consol = document.querySelector('[data-tab="consolidation"]');
      consol.hidden = !(d.features && d.features.consolidation);
      if (consol.hidden && S.tab === 'consolidation') showTab('profiles');
      renderFences();
    }, function (e) { toast(errText(e), true); });
  }

  function openScope() {
    var want = formScope();
    spaceError('');
    if (!want.session_name) { spaceError(T('space.need_session')); return Promise.resolve(); }
    $('space-status').textContent = T('space.opening');
    return call('/derive', { scope: want }).then(function (d) {
      S.scope = want;
      S.derived = d;
      S.cache = {};
      S.pending = {};
      S.exportDoc = null;
      S.auditDoc = null;
      S.ep.page = 1;
      S.audit.page = 1;
      S.cand.page = 1;
      S.cand.tombPage = 1;
      $('space-status').textContent = '';
      renderDerived();
      renderScopes();
      renderBanner();
      loadOverview();
      showTab(S.tab);
    }, function (e) {
      $('space-status').textContent = '';
      spaceError(errText(e));
    });
  }

  function deriveOnly() {
    var want = formScope();
    spaceError('');
    var body = { scope: want };
    if ($('f-isolation').value) body.isolation = $('f-isolation').value;
    return call('/derive', body).then(function (d) { S.derived = d; renderDerived(); },
      function (e) { spaceError(errText(e)); });
  }

  function keyRows(d) {
    return [
      [T('key.isolation'), TV('iso', d.isolation)],
      [T('key.session_name'), dash(d.session_name), 'mono'],
      [T('key.bot_uuid'), dash(d.bot_uuid), 'mono'],
      [T('key.session_key'), dash(d.session_key), 'mono'],
      [T('key.scope_key'), dash(d.scope_key), 'mono'],
      [T('key.user_key'), dash(d.user_key), 'mono'],
      [T('key.collection'), dash(d.collection), 'mono'],
      [T('key.sender_id'), dash(d.sender_id), 'mono'],
    ];
  }

  function renderDerived() {
    var box = $('derived');
    var d = S.derived;
    if (!d) { fill(box, []); return; }
    var kids = [h('div', { className: 'small muted', text: T('space.keys_used') }), kv(keyRows(d))];
    if (d.preview) {
      kids.push(h('div', { className: 'small notice', text: T('space.preview', { isolation: TV('iso', d.preview.isolation) }) }));
      kids.push(kv(keyRows(d.preview)));
    }
    fill(box, kids);
  }

  function loadOverview() {
    if (!S.scope) return Promise.resolve();
    return call('/overview').then(function (d) { S.overview = d; renderBanner(); renderCounts(); },
      function (e) { toast(errText(e), true); });
  }

  function renderBanner() {
    var b = $('scope-banner');
    if (!S.scope || !S.derived) {
      fill(b, [h('span', { className: 'muted', text: T('scope.none') })]);
      return;
    }
    var d = S.derived;
    var o = S.overview;
    function item(label, value, mono) {
      return h('span', null, h('span', { className: 'label', text: label + ' ' }), h('span', { className: mono ? 'mono' : 'value', text: value }));
    }
    fill(b, [
      item(T('key.session_name'), d.session_name, true),
      item(T('key.bot_uuid'), dash(d.bot_uuid), true),
      item(T('space.kb'), d.collection || T('space.kb_none'), true),
      item(T('key.isolation'), TV('iso', d.isolation)),
      d.sender_id ? item(T('key.sender_id'), d.sender_id, true) : null,
      o && o.counts ? item(T('scope.active'), String(o.counts.active || 0)) : null,
      o ? item(T('scope.audit'), String(o.audit_total || 0)) : null,
    ]);
  }

  // ------------------------------------------------------------------------------ tabs
  var LOADERS = {};
  var RENDERERS = {};

  function showTab(name) {
    S.tab = name;
    Array.prototype.forEach.call(document.querySelectorAll('#tabs [role="tab"]'), function (b) {
      b.setAttribute('aria-selected', b.getAttribute('data-tab') === name ? 'true' : 'false');
    });
    Array.prototype.forEach.call(document.querySelectorAll('.panel'), function (p) { p.hidden = p.id !== 'panel-' + name; });
    if (!S.scope) {
      var body = panelBody(name);
      if (body) fill(body, [h('div', { className: 'empty', text: T('scope.pick_first') })]);
      return;
    }
    if (S.cache[name] !== undefined) RENDERERS[name] && RENDERERS[name]();
    else if (LOADERS[name]) run(name, LOADERS[name]);
    else if (RENDERERS[name]) RENDERERS[name]();
  }

  function rerender() {
    renderKbs();
    renderScopes();
    renderDerived();
    renderBanner();
    renderCounts();
    renderFences();
    if (S.scope && RENDERERS[S.tab]) RENDERERS[S.tab]();
    else showTab(S.tab);
  }

  // ------------------------------------------------------------------------------ profiles
  LOADERS.profiles = function () {
    return call('/profiles').then(function (d) { S.cache.profiles = d; RENDERERS.profiles(); });
  };

  RENDERERS.profiles = function () {
    var d = S.cache.profiles;
    if (!d) return;
    var kids = [profileCard(d.session, T('prof.session'))];
    kids.push(h('h2', { text: T('prof.speakers') }));
    if (!d.speakers.length) kids.push(h('div', { className: 'empty', text: T('prof.no_speakers') }));
    d.speakers.forEach(function (p) { kids.push(profileCard(p, T('prof.speaker', { id: p.speaker_id }))); });
    fill(panelBody('profiles'), kids);
    fill($('speaker-ids'), d.speakers.map(function (p) { return h('option', { value: p.speaker_id }); }));
  };

  function updateProfile(p, patch) {
    return run('profiles', function () {
      return call('/profile/update', { target: p.kind, speaker_id: p.speaker_id || '', patch: patch })
        .then(function () { toast(T('prof.saved')); return LOADERS.profiles(); })
        .then(loadOverview);
    });
  }

  function profileCard(p, title) {
    var traits = p.traits.length ? p.traits.map(function (t) {
      return h('span', { className: 'chip' }, h('span', { text: t }), h('button', {
        type: 'button', title: T('prof.remove'), 'aria-label': T('prof.remove'), 'data-action': 'remove-trait', text: '×',
        on: { click: function () { updateProfile(p, { remove_traits: [t] }); } },
      }));
    }) : [h('span', { className: 'muted', text: '—' })];
    var prefKeys = Object.keys(p.preferences || {});
    var prefs = prefKeys.length ? prefKeys.map(function (k) {
      return h('span', { className: 'chip' }, h('span', { text: k + ': ' + p.preferences[k] }), h('button', {
        type: 'button', title: T('prof.remove'), 'aria-label': T('prof.remove'), 'data-action': 'remove-pref', text: '×',
        on: { click: function () { updateProfile(p, { remove_preferences: [k] }); } },
      }));
    }) : [h('span', { className: 'muted', text: '—' })];
    var notes = p.notes.length ? h('ul', null, p.notes.map(function (n) {
      return h('li', null, h('span', { text: n }), h('button', {
        type: 'button', className: 'link', 'data-action': 'remove-note', text: T('prof.remove'),
        on: { click: function () { updateProfile(p, { remove_notes: [n] }); } },
      }));
    })) : h('span', { className: 'muted', text: '—' });

    var field = h('select', { 'data-role': 'field', 'aria-label': T('prof.field') },
      h('option', { value: 'name', text: T('prof.f_name') }),
      h('option', { value: 'add_traits', text: T('prof.f_trait') }),
      h('option', { value: 'set_preferences', text: T('prof.f_pref') }),
      h('option', { value: 'add_notes', text: T('prof.f_note') }));
    var key = h('input', { type: 'text', maxlength: '256', size: '10', 'data-role': 'key', placeholder: T('prof.key_ph'), 'aria-label': T('prof.key_ph'), hidden: true });
    var value = h('input', { type: 'text', maxlength: '256', className: 'grow', 'data-role': 'value', placeholder: T('prof.value_ph'), 'aria-label': T('prof.value_ph') });
    field.addEventListener('change', function () { key.hidden = field.value !== 'set_preferences'; });
    var save = h('button', { type: 'button', className: 'primary', 'data-action': 'save-profile', text: T('prof.save'),
      on: { click: function () {
        var v = value.value.trim();
        var patch = {};
        if (field.value === 'name') patch.name = v;
        else if (field.value === 'add_traits') patch.add_traits = [v];
        else if (field.value === 'add_notes') patch.add_notes = [v];
        else { patch.set_preferences = {}; patch.set_preferences[key.value.trim()] = v; }
        updateProfile(p, patch);
      } } });

    return h('article', { className: 'card stack', 'data-profile': p.kind, 'data-speaker': p.speaker_id || null },
      h('div', { className: 'row spread' }, h('h3', { text: title }),
        h('span', { className: 'small muted' }, p.updated_at ? [T('prof.updated') + ' ', timeEl(p.updated_at)] : T('prof.never'))),
      kv([
        [T('prof.name'), p.name ? h('span', { text: p.name }) : h('span', { className: 'muted', text: '—' })],
        [T('prof.traits'), h('span', null, traits)],
        [T('prof.preferences'), h('span', null, prefs)],
        [T('prof.notes'), notes],
        [T('prof.key'), p.key, 'mono'],
      ]),
      h('div', { className: 'row' }, field, key, value, save));
  }

  // ------------------------------------------------------------------------------ episodes
  function epFilters() {
    return {
      speaker: S.ep.speaker,
      time_from: toIso(S.ep.from) || undefined,
      time_until: toIso(S.ep.until) || undefined,
      page: S.ep.page,
      page_size: PAGE_SIZE,
    };
  }

  LOADERS.episodes = function () {
    var req = epFilters();
    var p;
    if (S.ep.mode === 'search') {
      req.query = S.ep.query;
      p = call('/episodes/search', req);
    } else {
      req.status = S.ep.status;
      p = call('/episodes', req);
    }
    return p.then(function (d) { S.cache.episodes = d; RENDERERS.episodes(); });
  };

  function renderCounts() {
    var box = $('ep-counts');
    var c = S.overview && S.overview.counts;
    if (!c) { fill(box, S.overview ? [h('span', { className: 'muted', text: T('ep.no_kb') })] : []); return; }
    fill(box, Object.keys(c).map(function (k) {
      return h('span', { className: 'badge ' + k, 'data-count': k, text: TV('status', k) + ' ' + c[k] });
    }));
  }

  RENDERERS.episodes = function () {
    var d = S.cache.episodes;
    $('ep-status').disabled = S.ep.mode === 'search';
    $('ep-mode').textContent = S.ep.mode === 'search' ? T('ep.mode_search', { query: S.ep.query }) : T('ep.mode_list');
    renderCounts();
    if (!d) return;
    var body = panelBody('episodes');
    var cards = d.items.map(episodeCard);
    if (!cards.length) cards = [h('div', { className: 'empty', text: S.ep.mode === 'search' ? T('ep.none_found') : T('ep.none') })];
    if (d.capped && !d.has_more) cards.push(h('div', { className: 'small muted', text: T('ep.capped') }));
    fill(body, cards);
    pager($('ep-pager'), d.page, d.has_more, null, function (pg) { S.ep.page = pg; run('episodes', LOADERS.episodes); });
  };

  function pager(box, page, hasMore, pages, go) {
    fill(box, [
      h('button', { type: 'button', 'data-action': 'prev', disabled: page <= 1, text: T('page.prev'), on: { click: function () { go(page - 1); } } }),
      h('span', { className: 'small', 'data-role': 'page', text: pages ? T('page.of', { page: page, pages: pages }) : T('page.n', { page: page }) }),
      h('button', { type: 'button', 'data-action': 'next', disabled: !hasMore, text: T('page.next'), on: { click: function () { go(page + 1); } } }),
    ]);
  }

  function episodeAction(endpoint, id, reason, doneKey) {
    return run('episodes', function () {
      return call(endpoint, { id: id, reason: reason || '' }).then(function () {
        toast(T(doneKey, { id: id }));
        return LOADERS.episodes();
      }).then(loadOverview);
    });
  }

  function episodeCard(e) {
    var actions = [];
    if (e.status === 'active') {
      actions.push(h('button', { type: 'button', 'data-action': 'archive', text: T('ep.archive'),
        on: { click: function () { episodeAction('/episode/archive', e.id, '', 'ep.archived'); } } }));
    }
    if (e.status === 'archived') {
      actions.push(h('button', { type: 'button', 'data-action': 'restore', text: T('ep.restore'),
        on: { click: function () { episodeAction('/episode/restore', e.id, '', 'ep.restored'); } } }));
    }
    if (e.status === 'active' && e.confidence !== 'confirmed') {
      actions.push(h('button', { type: 'button', 'data-action': 'confirm-episode', text: T('ep.confirm'),
        on: { click: function () { episodeAction('/episode/confirm', e.id, '', 'ep.confirmed'); } } }));
    }
    var never = null;
    if (S.meta && S.meta.features && S.meta.features.candidates) {
      never = h('input', { type: 'checkbox', 'data-role': 'never' });
    }
    actions.push(confirmButton('forget:' + e.id, T('ep.forget'), T('ep.forget_confirm'), function (reason) {
      if (never && never.checked) forgetForGood(e.id, reason);
      else episodeAction('/episode/forget', e.id, reason, 'ep.forgotten');
    }, never ? h('label', { className: 'inline' }, never, h('span', { text: T('ep.never') })) : null));
    return h('article', { className: 'episode', 'data-episode-id': e.id, 'data-status': e.status },
      h('div', { className: 'row spread' },
        h('span', { className: 'row' }, statusBadge(e.status), trustBadge(e), h('span', { className: 'mono muted', text: e.id })),
        h('span', { className: 'small muted row' },
          e.sender_id ? h('span', { text: T('ep.by', { speaker: e.sender_id }) }) : null,
          e.event_at ? h('span', null, T('f.event_at') + ' ', timeEl(e.event_at)) : null,
          h('span', null, T('f.timestamp') + ' ', timeEl(e.timestamp)),
          e.score != null ? h('span', { className: 'badge', text: T('ep.score', { score: e.score.toFixed(3) }) }) : null)),
      h('div', { className: 'content', 'data-role': 'content', text: e.content }),
      e.tags && e.tags.length ? h('div', null, e.tags.map(function (t) { return h('span', { className: 'badge', text: '#' + t }); })) : null,
      h('details', null, h('summary', { text: T('ep.details') }), kv([
        [T('f.timestamp'), timeEl(e.timestamp)],
        [T('f.event_at'), timeEl(e.event_at)],
        [T('f.valid_from'), timeEl(e.valid_from)],
        [T('f.valid_until'), timeEl(e.valid_until)],
        [T('f.claim_type'), TV('claim', e.claim_type)],
        [T('f.confidence'), TV('conf', e.confidence)],
        [T('f.importance'), String(e.importance)],
        [T('f.origin'), TV('origin', e.origin)],
        [T('f.source_ref'), dash(e.source_ref), 'mono'],
        [T('f.sender_id'), dash(e.sender_id), 'mono'],
        e.document_id ? [T('f.document_id'), e.document_id, 'mono'] : null,
        e.import_original_id ? [T('f.import_original_id'), e.import_original_id, 'mono'] : null,
        e.supersedes && e.supersedes.length ? [T('f.supersedes'), e.supersedes.join(', '), 'mono'] : null,
        e.superseded_by ? [T('f.superseded_by'), e.superseded_by, 'mono'] : null,
        [T('f.content_hash'), dash(e.content_hash), 'mono'],
      ])),
      h('div', { className: 'row' }, actions));
  }

  // A memory that is inferred or not confirmed by a person says so.
  var TRUST = { inferred: 'trust.inferred', unconfirmed: 'trust.unconfirmed' };
  function trustBadge(e) {
    var key = TRUST[e.trust];
    return key ? h('span', { className: 'badge trust', 'data-trust': e.trust, text: T(key) }) : null;
  }

  function forgetForGood(id, reason) {
    return run('episodes', function () {
      return call('/episode/forget', { id: id, reason: reason || '', never: true }).then(function (r) {
        toast(T('ep.tombstoned', { id: id, tombstone: r.tombstone }));
        delete S.cache.candidates;
        return LOADERS.episodes();
      }).then(loadOverview);
    });
  }

  // ------------------------------------------------------------------------------ candidates
  var CAND_STATUS = {
    pending: 'cand.st_pending', conflict: 'cand.st_conflict', accepted: 'cand.st_accepted', rejected: 'cand.st_rejected',
  };
  var TOMB_KIND = { rejected: 'tomb.kind_rejected', forgotten: 'tomb.kind_forgotten' };

  LOADERS.candidates = function () {
    return Promise.all([
      call('/candidates', { page: S.cand.page, page_size: PAGE_SIZE, all_statuses: S.cand.all }),
      call('/tombstones', { page: S.cand.tombPage, page_size: PAGE_SIZE }),
    ]).then(function (r) { S.cache.candidates = { list: r[0], tombs: r[1] }; RENDERERS.candidates(); });
  };

  RENDERERS.candidates = function () {
    var d = S.cache.candidates;
    if (!d) return;
    var cards = d.list.items.map(candidateCard);
    if (!cards.length) cards = [h('div', { className: 'empty', text: S.cand.all ? T('cand.none_all') : T('cand.none') })];
    cards.unshift(h('div', { className: 'small muted', 'data-role': 'cand-total', text: T('cand.total', { total: d.list.total }) }));
    fill(panelBody('candidates'), cards);
    pager($('cand-pager'), d.list.page, d.list.has_more, null, function (pg) { S.cand.page = pg; run('candidates', LOADERS.candidates); });
    renderTombstones(d.tombs);
  };

  function candStatusBadge(status) {
    return h('span', { className: 'badge ' + status, 'data-status': status, text: T(CAND_STATUS[status] || 'cand.st_pending') });
  }

  function decide(endpoint, id, reason) {
    return run('candidates', function () {
      return call(endpoint, { id: id, reason: reason || '' }).then(function (r) {
        var c = r.candidate;
        if (r.parked) toast(T('cand.parked', { id: c.id }), true);
        else if (c.status === 'accepted') toast(T('cand.accepted', { id: c.id, result: c.result_id }));
        else toast(T('cand.rejected', { id: c.id, tombstone: c.result_id }));
        delete S.cache.episodes;
        return LOADERS.candidates();
      }).then(loadOverview);
    });
  }

  function sideOf(title, rows) {
    return h('div', { className: 'side' }, h('h4', { text: title }), rows);
  }

  function candidateCard(c) {
    var body;
    if (c.status === 'conflict' && c.conflicts_with && c.conflicts_with.length) {
      body = h('div', { className: 'sides', 'data-role': 'sides' },
        sideOf(T('cand.new_side'), h('div', { className: 'content', 'data-role': 'content', text: c.content })),
        sideOf(T('cand.stored_side'), c.conflicts_with.map(function (x) {
          return h('div', { 'data-conflict-id': x.id },
            h('div', { className: 'content', text: x.content }),
            h('div', { className: 'small muted mono', text: x.kind === 'profile' ? T('cand.profile_field', { field: x.field }) : x.id + (x.attribute ? ' · ' + x.attribute : '') }));
        })));
    } else {
      body = h('div', { className: 'content', 'data-role': 'content', text: c.content });
    }
    var open = c.status === 'pending' || c.status === 'conflict';
    var actions = null;
    if (open) {
      var reason = h('input', { type: 'text', maxlength: '500', className: 'grow', 'data-role': 'cand-reason',
        placeholder: T('action.reason_ph'), 'aria-label': T('action.reason_ph') });
      actions = h('div', { className: 'row' }, reason,
        h('button', { type: 'button', className: 'primary', 'data-action': 'accept', text: T('cand.accept'),
          on: { click: function () { decide('/candidate/accept', c.id, reason.value); } } }),
        h('button', { type: 'button', className: 'danger', 'data-action': 'reject', text: T('cand.reject'),
          on: { click: function () { decide('/candidate/reject', c.id, reason.value); } } }));
    }
    var decided = c.decided_at ? kv([
      [T('cand.decided_by'), dash(c.decided_by && (c.decided_by.sender_id || c.decided_by.surface)), 'mono'],
      [T('cand.decided_at'), timeEl(c.decided_at)],
      [T('cand.result'), dash(c.result_id), 'mono'],
      [T('cand.reason'), dash(c.reason)],
    ]) : null;
    return h('article', { className: 'candidate', 'data-candidate-id': c.id, 'data-status': c.status },
      h('div', { className: 'row spread' },
        h('span', { className: 'row' }, candStatusBadge(c.status), h('span', { className: 'mono muted', text: c.id }),
          h('span', { className: 'badge', text: c.classification }), h('span', { className: 'badge', text: c.origin })),
        h('span', { className: 'small muted row' },
          c.sender_id ? h('span', { text: T('ep.by', { speaker: c.sender_id }) }) : null, timeEl(c.created_at))),
      body,
      c.target === 'profile' ? h('div', { className: 'small', text: T('cand.profile', { name: (c.profile_patch || {}).name || '' }) }) : null,
      c.evidence_quote && c.evidence_quote !== c.content ? h('div', { className: 'small muted', text: T('cand.evidence', { quote: c.evidence_quote }) }) : null,
      c.model_recommendation ? h('div', { className: 'small notice', 'data-role': 'model-advice', text: T('cand.model', { advice: c.model_recommendation, note: c.model_note || '' }) }) : null,
      c.redactions ? h('div', { className: 'small muted', text: T('cand.redacted', { n: c.redactions }) }) : null,
      decided,
      actions);
  }

  function renderTombstones(d) {
    var box = $('tomb-body');
    if (!d) { fill(box, []); return; }
    if (!d.items.length) { fill(box, [h('div', { className: 'empty', text: T('tomb.none') })]); fill($('tomb-pager'), []); return; }
    fill(box, [h('table', { className: 'grid' },
      h('thead', null, h('tr', null, ['tomb.id', 'tomb.kind', 'tomb.by', 'tomb.at', 'tomb.count', 'tomb.speaker', 'tomb.reason', 'tomb.action']
        .map(function (k) { return h('th', { text: T(k) }); }))),
      h('tbody', null, d.items.map(function (t) {
        return h('tr', { 'data-tombstone-id': t.id },
          h('td', { className: 'mono nowrap', text: t.id }), h('td', { text: T(TOMB_KIND[t.kind] || 'tomb.kind_rejected') }),
          h('td', { className: 'mono', text: dash(t.by && (t.by.sender_id || t.by.surface)) }), h('td', { className: 'nowrap' }, timeEl(t.at)),
          h('td', { text: String(t.count) }), h('td', { className: 'mono', text: t.subject || T('tomb.anyone') }),
          h('td', { text: dash(t.reason) }),
          h('td', null, confirmButton('lift:' + t.id, T('tomb.lift'), T('tomb.lift_confirm'), function (reason) {
            run('candidates', function () {
              return call('/tombstone/lift', { id: t.id, reason: reason }).then(function () {
                toast(T('tomb.lifted', { id: t.id }));
                return LOADERS.candidates();
              });
            });
          })));
      })))]);
    pager($('tomb-pager'), d.page, d.page < d.pages, d.pages, function (pg) { S.cand.tombPage = pg; run('candidates', LOADERS.candidates); });
  }

  // ------------------------------------------------------------------------------ consolidation
  var CONSOL_RISK = {
    high_importance: 'consol.risk_high_importance', replacement_missing: 'consol.risk_replacement_missing',
    replacement_inactive: 'consol.risk_replacement_inactive', replacement_recent: 'consol.risk_replacement_recent',
    document: 'consol.risk_document',
  };
  var CONSOL_DRAFT = {
    malformed: 'consol.draft_malformed', keys: 'consol.draft_keys', summary: 'consol.draft_summary',
    too_long: 'consol.draft_too_long', uncited: 'consol.draft_uncited', partial: 'consol.draft_partial',
    budget: 'consol.draft_budget', no_model: 'consol.draft_no_model', no_sources: 'consol.draft_no_sources',
    model_failed: 'consol.draft_model_failed', model_timeout: 'consol.draft_model_timeout',
    kb_deleted: 'consol.draft_kb_deleted', sources_changed: 'consol.draft_sources_changed',
  };

  function consolState() {
    if (!S.cache.consolidation) S.cache.consolidation = { proposals: null, preview: null, result: null };
    return S.cache.consolidation;
  }

  LOADERS.consolidation = function () {
    return call('/consolidation/proposals').then(function (d) { consolState().proposals = d; RENDERERS.consolidation(); });
  };

  function consolPreview() {
    return run('consolidation', function () {
      return call('/consolidation/preview').then(function (d) {
        var st = consolState();
        st.preview = d;
        st.result = null;
        return LOADERS.consolidation();
      });
    });
  }

  function consolRun(proposalId) {
    return run('consolidation', function () {
      var body = proposalId ? { proposal_id: proposalId } : {};
      return call('/consolidation/run', body).then(function (r) {
        var st = consolState();
        st.result = r;
        st.preview = null; // what it showed has changed
        toast(T('consol.ran', { n: r.archived.length }));
        delete S.cache.episodes;
        return LOADERS.consolidation();
      }).then(loadOverview);
    });
  }

  function consolDiscard(proposalId) {
    return run('consolidation', function () {
      return call('/consolidation/discard', { proposal_id: proposalId }).then(function (r) {
        toast(T(r.discarded ? 'consol.discarded' : 'consol.discard_none', { id: proposalId }));
        var st = consolState();
        if (st.preview && st.preview.proposal && st.preview.proposal.id === proposalId) st.preview.proposal = null;
        return LOADERS.consolidation();
      });
    });
  }

  // Two-step confirmation without a reason (the consolidation routes take none).
  function consolConfirm(key, label, confirmLabel, className, action) {
    if (!S.pending[key]) {
      return h('button', {
        type: 'button', className: className, 'data-action': key.split(':')[0], text: label,
        on: { click: function () { S.pending[key] = true; rerender(); } },
      });
    }
    return h('span', { className: 'row' },
      h('button', {
        type: 'button', className: className + ' confirm', 'data-action': 'confirm', text: confirmLabel,
        on: { click: function () { delete S.pending[key]; action(); } },
      }),
      h('button', {
        type: 'button', 'data-action': 'cancel', text: T('action.cancel'),
        on: { click: function () { delete S.pending[key]; rerender(); } },
      }));
  }

  RENDERERS.consolidation = function () {
    var st = S.cache.consolidation;
    if (!st) return;
    var kids = [];
    var settings = st.preview || st.proposals;
    if (settings && !settings.enabled) kids.push(h('div', { className: 'notice small', 'data-role': 'consol-disabled', text: T('consol.disabled') }));
    else if (settings && !settings.model_configured) kids.push(h('div', { className: 'small muted', text: T('consol.no_model') }));
    if (st.result) kids.push(consolResult(st.result));
    if (st.preview) kids.push(consolPreviewCard(st.preview));
    else kids.push(h('div', { className: 'empty', text: T('consol.preview_hint') }));
    kids.push(consolProposals(st.proposals));
    fill(panelBody('consolidation'), kids);
  };

  function consolResult(r) {
    var summary = r.summary;
    return h('div', { className: 'card stack', 'data-role': 'consol-result' },
      h('h2', { text: T('consol.result') }),
      kv([
        [T('consol.archived'), r.archived.length ? r.archived.join(', ') : T('consol.archived_none'), 'mono'],
        r.proposal_id ? [T('consol.proposal'), r.proposal_id, 'mono'] : null,
        summary ? [T('consol.summary_written'), summary.id, 'mono'] : null,
      ]),
      summary ? h('div', { className: 'content', 'data-role': 'consol-summary', text: summary.content }) : null);
  }

  function riskBadges(risks) {
    if (!risks || !risks.length) return null;
    return h('div', { className: 'row' }, risks.map(function (x) {
      return h('span', { className: 'badge amber', 'data-risk': x, text: CONSOL_RISK[x] ? T(CONSOL_RISK[x]) : String(x) });
    }));
  }

  function consolPreviewCard(p) {
    var cands = p.candidates.map(function (c) {
      return h('article', { className: 'episode', 'data-consol-candidate': c.id },
        h('div', { className: 'row spread' },
          h('span', { className: 'row' }, statusBadge(c.status), h('span', { className: 'mono muted', text: c.id })),
          h('span', { className: 'small muted row' },
            h('span', { text: T('consol.age', { days: c.age_days }) }),
            c.superseded_by ? h('span', { className: 'mono', text: T('consol.superseded_by', { id: c.superseded_by }) }) : null,
            timeEl(c.timestamp))),
        h('div', { className: 'content', text: c.content }),
        riskBadges(c.risks));
    });
    var cleanup = [h('h2', { text: T('consol.candidates', { n: p.candidates.length }) })];
    if (cands.length) {
      cleanup.push(h('p', { className: 'small muted', text: T('consol.run_intro') }));
      cleanup = cleanup.concat(cands);
      cleanup.push(h('div', { className: 'row' },
        consolConfirm('consol-run', T('consol.run'), T('consol.run_confirm', { n: cands.length }), 'primary',
          function () { consolRun(null); })));
    } else {
      cleanup.push(h('div', { className: 'empty', text: T('consol.candidates_none') }));
    }
    var sources = p.sources.map(function (e) {
      return h('article', { className: 'episode', 'data-consol-source': e.id },
        h('div', { className: 'row spread' },
          h('span', { className: 'mono muted', text: e.id }),
          h('span', { className: 'small muted row' },
            e.sender_id ? h('span', { text: T('ep.by', { speaker: e.sender_id }) }) : null, timeEl(e.timestamp))),
        h('div', { className: 'content', text: e.content }));
    });
    var draft = [h('h2', { text: T('consol.sources', { n: p.sources.length }) })];
    draft = draft.concat(sources.length ? sources : [h('div', { className: 'empty', text: T('consol.sources_none') })]);
    if (p.skipped_long) draft.push(h('div', { className: 'small muted', text: T('consol.skipped_long', { n: p.skipped_long }) }));
    if (p.proposal) {
      draft.push(h('div', { className: 'small ok-text', 'data-role': 'consol-draft', text: T('consol.draft_ready', { id: p.proposal.id }) }));
      draft.push(h('div', { className: 'content', text: p.proposal.summary }));
    } else if (p.draft_error) {
      draft.push(h('div', { className: 'notice small', 'data-role': 'consol-draft-error',
        text: T('consol.draft_failed', { reason: CONSOL_DRAFT[p.draft_error] ? T(CONSOL_DRAFT[p.draft_error]) : p.draft_error }) }));
    }
    if (p.apply_profile_updates) draft.push(h('div', { className: 'small muted', text: T('consol.profiles_untouched') }));
    return h('div', { className: 'stack', 'data-role': 'consol-preview' },
      h('div', { className: 'card stack' }, cleanup),
      h('div', { className: 'card stack' }, draft));
  }

  function consolProposals(d) {
    var kids = [h('h2', { text: T('consol.proposals') })];
    var items = d ? d.proposals : [];
    if (!items.length) kids.push(h('div', { className: 'empty', text: T('consol.proposals_none') }));
    items.forEach(function (p) {
      var pending = p.status === 'pending';
      kids.push(h('article', { className: 'candidate', 'data-proposal-id': p.id, 'data-status': p.status },
        h('div', { className: 'row spread' },
          h('span', { className: 'row' }, h('span', { className: 'badge ' + p.status, text: p.status }),
            h('span', { className: 'mono muted', text: p.id })),
          h('span', { className: 'small muted row' },
            p.sender_id ? h('span', { text: T('ep.by', { speaker: p.sender_id }) }) : null, timeEl(p.created_at))),
        h('div', { className: 'content', text: p.summary }),
        h('div', { className: 'small muted mono', text: T('consol.from_sources', { ids: p.source_ids.join(', ') }) }),
        p.valid_from || p.valid_until ? h('div', { className: 'small muted', text: T('consol.validity', { from: dash(p.valid_from), until: dash(p.valid_until) }) }) : null,
        pending ? h('div', { className: 'row' },
          consolConfirm('consol-approve:' + p.id, T('consol.approve'), T('consol.approve_confirm'), 'primary',
            function () { consolRun(p.id); }),
          consolConfirm('consol-discard:' + p.id, T('consol.discard'), T('consol.discard_confirm'), 'danger',
            function () { consolDiscard(p.id); })) : null));
    });
    return h('div', { className: 'card stack', 'data-role': 'consol-proposals' }, kids);
  }

  // ------------------------------------------------------------------------------ injection
  LOADERS.injection = function () {
    return call('/injection').then(function (d) { S.cache.injection = d; RENDERERS.injection(); });
  };

  RENDERERS.injection = function () {
    var d = S.cache.injection;
    if (!d) return;
    var body = panelBody('injection');
    if (!d.snapshot) { fill(body, [h('div', { className: 'empty', text: T('inj.none') })]); return; }
    var s = d.snapshot;
    var speaker = s.speaker && typeof s.speaker === 'object' ? [s.speaker.id, s.speaker.name].filter(Boolean).join(' · ') : s.speaker;
    var eps = d.episodes.length ? h('ol', null, d.episodes.map(function (e) {
      return h('li', { 'data-episode-id': e.id },
        h('span', { className: 'mono muted', text: e.id + ' ' }),
        e.missing ? h('span', { className: 'muted', text: T('inj.missing') })
          : h('span', null, statusBadge(e.status), ' ', h('span', { text: e.content })));
    })) : h('span', { className: 'muted', text: T('inj.no_episodes') });
    fill(body, [
      h('div', { className: 'card stack' },
        h('h3', { text: T('inj.title') }),
        kv([
          [T('inj.at'), timeEl(s.at)],
          [T('inj.injected'), s.injected ? T('yes') : T('no')],
          [T('inj.blocks'), dash(s.blocks)],
          [T('inj.chars'), dash(s.chars)],
          [T('inj.tokens'), dash(s.tokens)],
          [T('inj.speaker'), dash(speaker)],
          [T('inj.profiles'), Array.isArray(s.profiles_used) && s.profiles_used.length ? s.profiles_used.map(function (k) { return TV('inj.profile', k); }).join(', ') : '—'],
          [T('inj.query_id'), dash(s.query_id)],
        ])),
      h('div', { className: 'card stack' }, h('h3', { text: T('inj.episodes') }), eps),
      h('details', null, h('summary', { text: T('inj.raw') }), h('pre', { className: 'raw', text: JSON.stringify(s, null, 2) })),
    ]);
  };

  // ------------------------------------------------------------------------------ audit
  LOADERS.audit = function () {
    return call('/audit', { page: S.audit.page, page_size: PAGE_SIZE }).then(function (d) { S.cache.audit = d; RENDERERS.audit(); });
  };

  RENDERERS.audit = function () {
    var d = S.cache.audit;
    var body = panelBody('audit');
    var kids = [];
    if (S.auditDoc) kids.push(documentBox('audit', S.auditDoc.filename, S.auditDoc.document, h('div', { className: 'small', text: T('audit.export_summary', { count: S.auditDoc.document.count }) })));
    if (d) {
      kids.push(h('div', { className: 'small muted', text: T('audit.total', { total: d.total }) }));
      if (!d.entries.length) kids.push(h('div', { className: 'empty', text: T('audit.none') }));
      else {
        kids.push(h('table', { className: 'grid' },
          h('thead', null, h('tr', null, ['audit.seq', 'audit.at', 'audit.operation', 'audit.surface', 'audit.sender', 'audit.targets', 'audit.summary', 'audit.reason']
            .map(function (k) { return h('th', { text: T(k) }); }))),
          h('tbody', null, d.entries.map(function (e) {
            var targets = (e.targets || []).join(', ');
            return h('tr', { 'data-seq': e.seq },
              h('td', { className: 'nowrap', text: e.seq }), h('td', { className: 'nowrap' }, timeEl(e.at)),
              h('td', { className: 'mono nowrap', text: e.operation }), h('td', { className: 'nowrap', text: e.surface }),
              h('td', { className: 'mono', text: dash(e.sender) }),
              h('td', { className: 'mono', title: targets, text: targets.length > 120 ? targets.slice(0, 120) + '…' : targets }),
              h('td', { text: e.summary }), h('td', { text: dash(e.reason) }));
          }))));
      }
      pager($('audit-pager'), d.page, d.page < d.pages, d.pages, function (pg) { S.audit.page = pg; run('audit', LOADERS.audit); });
    }
    fill(body, kids);
  };

  function exportAudit() {
    return run('audit', function () {
      return call('/audit/export').then(function (doc) {
        var name = 'ltm-audit-' + (S.derived ? S.derived.user_key : 'scope').replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 80) + '.json';
        S.auditDoc = { filename: name, document: doc };
        RENDERERS.audit();
      });
    });
  }

  // ------------------------------------------------------------------------------ export
  RENDERERS.export = function () {
    var body = panelBody('export');
    var x = S.exportDoc;
    if (!x) { fill(body, [h('div', { className: 'empty', text: T('export.none') })]); return; }
    var doc = x.document;
    var summary = kv([
      [T('export.layer'), TV('export.layer', doc.layer)],
      [T('export.count'), String(doc.count)],
      doc.total != null ? [T('export.total'), String(doc.total)] : null,
      [T('export.at'), timeEl(doc.exported_at)],
      [T('export.checksum'), dash(doc.checksum), 'mono'],
      doc.truncated ? [T('export.truncated'), T('yes')] : null,
    ]);
    fill(body, [documentBox('export', x.filename, doc, summary)]);
  };

  function doExport(layer) {
    return run('export', function () {
      var req = { layer: layer };
      if (layer === 'l2') req.status = $('export-status').value;
      return call('/export', req).then(function (d) {
        S.exportDoc = d;
        S.cache.export = true;
        RENDERERS.export();
        toast(T('export.done', { count: d.document.count }));
        loadOverview();
      });
    });
  }

  // ------------------------------------------------------------------------------ diagnostics
  RENDERERS.diagnostics = function () {
    var d = S.cache.diagnostics;
    var body = panelBody('diagnostics');
    renderFences();
    if (!d) { fill(body, [h('div', { className: 'empty', text: T('diag.not_run') })]); return; }
    var hl = d.health;
    fill(body, [
      h('div', { className: 'card health ' + hl.verdict, 'data-verdict': hl.verdict },
        h('div', { className: 'row' }, h('span', { className: 'badge ' + hl.verdict, text: TV('verdict', hl.verdict) }),
          h('strong', { text: TV('diag.overall', hl.verdict) }))),
      h('div', { className: 'cards' }, hl.checks.map(function (c) {
        var text = (c.texts && (c.texts[langKey()] || c.texts.en_US)) || c.key;
        return h('div', { className: 'card health stack ' + c.verdict, 'data-check': c.name, 'data-verdict': c.verdict },
          h('div', { className: 'row spread' }, h('strong', { text: TV('diag.check', c.name) }),
            h('span', { className: 'badge ' + c.verdict, text: TV('verdict', c.verdict) })),
          h('div', { className: 'small', text: text }));
      })),
    ]);
  };

  function runDiagnostics() {
    return run('diagnostics', function () {
      return call('/diagnostics', { probe: $('diag-probe').checked }).then(function (d) {
        S.cache.diagnostics = d;
        RENDERERS.diagnostics();
      });
    });
  }

  function renderFences() {
    var box = $('fences-body');
    if (!box) return;
    if (!S.meta) { fill(box, []); return; }
    var supported = S.meta.features && S.meta.features.fences;
    if (!supported) {
      fill(box, [h('div', { className: 'notice', 'data-role': 'fences-unavailable', text: T('fence.unavailable') })]);
      return;
    }
    var d = S.cache.diagnostics;
    if (!S.scope || !d) { fill(box, [h('div', { className: 'empty', text: T('fence.run_first') })]); return; }
    var items = d.fences.items;
    if (!items.length) { fill(box, [h('div', { className: 'ok-text', 'data-role': 'no-fences', text: T('fence.none') })]); return; }
    fill(box, [
      h('table', { className: 'grid' },
        h('thead', null, h('tr', null, ['fence.lock', 'fence.operation', 'fence.at', 'fence.detail'].map(function (k) { return h('th', { text: T(k) }); }))),
        h('tbody', null, items.map(function (f) {
          return h('tr', null, h('td', { className: 'mono', text: f.lock_key }), h('td', { className: 'mono', text: f.operation }),
            h('td', null, timeEl(f.dispatched_at)), h('td', { text: f.detail }));
        }))),
      h('div', { className: 'row' }, confirmButton('fences:clear', T('fence.clear'), T('fence.clear_confirm'), function (reason) {
        run('diagnostics', function () {
          return call('/fences/clear', { reason: reason }).then(function (r) {
            toast(T('fence.cleared', { count: r.cleared }));
            return call('/diagnostics', { probe: false }).then(function (d2) { S.cache.diagnostics = d2; RENDERERS.diagnostics(); });
          });
        });
      })),
    ]);
  }

  // ------------------------------------------------------------------------------ wiring
  function wire() {
    if (S.wired) return;
    S.wired = true;
    $('open-scope').addEventListener('click', openScope);
    $('derive').addEventListener('click', deriveOnly);
    $('refresh-scopes').addEventListener('click', function () { loadScopes(); loadKbs(); });
    ['f-session', 'f-bot', 'f-sender'].forEach(function (id) {
      $(id).addEventListener('keydown', function (ev) { if (ev.key === 'Enter') openScope(); });
    });
    Array.prototype.forEach.call(document.querySelectorAll('#tabs [role="tab"]'), function (b) {
      b.addEventListener('click', function () { showTab(b.getAttribute('data-tab')); });
    });
    function startSearch() {
      var q = $('ep-query').value.trim();
      if (!S.scope) { panelError('episodes', T('scope.pick_first')); return; }
      if (!q) { panelError('episodes', T('ep.need_query')); return; }
      S.ep.mode = 'search';
      S.ep.query = q;
      S.ep.page = 1;
      readFilters();
      run('episodes', LOADERS.episodes);
    }
    function readFilters() {
      S.ep.status = $('ep-status').value;
      S.ep.speaker = $('ep-speaker').value.trim();
      S.ep.from = $('ep-from').value;
      S.ep.until = $('ep-until').value;
    }
    $('ep-search').addEventListener('click', startSearch);
    $('ep-query').addEventListener('keydown', function (ev) { if (ev.key === 'Enter') startSearch(); });
    $('ep-clear').addEventListener('click', function () {
      $('ep-query').value = '';
      S.ep.mode = 'list';
      S.ep.query = '';
      S.ep.page = 1;
      readFilters();
      if (S.scope) run('episodes', LOADERS.episodes);
    });
    $('ep-apply').addEventListener('click', function () {
      readFilters();
      S.ep.page = 1;
      if (S.scope) run('episodes', LOADERS.episodes);
    });
    $('inj-reload').addEventListener('click', function () { if (S.scope) run('injection', LOADERS.injection); });
    $('audit-reload').addEventListener('click', function () { if (S.scope) run('audit', LOADERS.audit); });
    $('audit-export').addEventListener('click', function () { if (S.scope) exportAudit(); });
    $('export-l1').addEventListener('click', function () { if (S.scope) doExport('l1'); });
    $('export-l2').addEventListener('click', function () { if (S.scope) doExport('l2'); });
    $('diag-run').addEventListener('click', function () { if (S.scope) runDiagnostics(); });
    $('cand-all').addEventListener('change', function () {
      S.cand.all = $('cand-all').checked;
      S.cand.page = 1;
      if (S.scope) run('candidates', LOADERS.candidates);
    });
    $('cand-reload').addEventListener('click', function () { if (S.scope) run('candidates', LOADERS.candidates); });
    $('consol-preview').addEventListener('click', function () { if (S.scope) consolPreview(); else panelError('consolidation', T('scope.pick_first')); });
    $('consol-reload').addEventListener('click', function () { if (S.scope) run('consolidation', LOADERS.consolidation); });
  }

  function start() {
    if (!window.langbot || typeof langbot.onReady !== 'function') {
      $('no-host').hidden = false;
      return;
    }
    setTimeout(function () { if (!S.ready) $('no-host').hidden = false; }, 5000);
    langbot.onReady(function () {
      S.ready = true;
      $('no-host').hidden = true;
      document.documentElement.setAttribute('lang', langCode());
      wire();
      renderBanner();
      renderFences();
      showTab(S.tab);
      loadMeta();
      loadKbs();
      loadScopes();
    });
    langbot.onLanguageChange(function () {
      document.documentElement.setAttribute('lang', langCode());
      $('toast').textContent = '';
      rerender();
    });
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
