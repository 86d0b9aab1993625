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
