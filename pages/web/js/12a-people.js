  // ------------------------------------------------------------------------------ people (issue 35)
  // One person across every chat of a bot, not a memory space: the same listing as `!memory me`,
  // its JSON (the subject-access answer) and the same erase as `!memory forget-me`, as the operator.
  function personRequest() {
    return { scope: null, bot_uuid: $('people-bot').value.trim(), sender_id: $('people-sender').value.trim() };
  }

  function findPerson() {
    var req = personRequest();
    if (!req.sender_id) { panelError('people', T('people.need_sender')); return Promise.resolve(); }
    return run('people', function () {
      return call('/people', req).then(function (d) {
        S.person = { request: req, result: d };
        S.personDoc = null;
        S.personErased = null;
        RENDERERS.people();
      });
    });
  }

  function erasePerson() {
    var req = S.person && S.person.request;
    if (!req) return Promise.resolve();
    return run('people', function () {
      return call('/people/erase', req).then(function (done) {
        S.personErased = done;
        S.personDoc = null; // the document shown before the erase is no longer what is held
        return call('/people', req).then(function (d) { S.person = { request: req, result: d }; RENDERERS.people(); });
      });
    });
  }

  RENDERERS.people = function () {
    var body = panelBody('people');
    var x = S.person;
    if (!x) { fill(body, [h('div', { className: 'empty', text: T('people.none') })]); return; }
    var doc = x.result.document;
    var kids = [];
    if (S.personErased) kids.push(h('div', { className: 'notice', id: 'people-erased', text: T('people.erased', S.personErased) }));
    kids.push(kv([
      [T('people.sender'), doc.sender_id, 'mono'],
      [T('people.bot'), dash(doc.bot_uuid), 'mono'],
      [T('people.opted_out'), doc.opted_out ? T('yes') : T('no')],
      [T('people.count_episodes'), String(doc.episodes.length)],
      [T('people.count_profiles'), String(doc.profiles.length)],
      [T('people.count_candidates'), String(doc.candidates)],
    ]));
    kids.push(h('div', { className: 'row' },
      h('button', { type: 'button', id: 'people-export', text: T('people.export'),
        on: { click: function () { S.personDoc = x.result; RENDERERS.people(); } } }),
      confirmButton('people-erase:' + doc.sender_id, T('people.erase'), T('people.erase_confirm', { speaker: doc.sender_id }), function () { erasePerson(); })));
    if (S.personDoc) kids.push(documentBox('people', S.personDoc.filename, S.personDoc.document, h('div', { className: 'small', text: T('people.export_summary') })));
    kids.push(h('h3', { text: T('people.profiles') }));
    if (!doc.profiles.length) kids.push(h('div', { className: 'empty', text: T('people.no_profiles') }));
    doc.profiles.forEach(function (p) {
      var bits = [p.name].concat(p.traits || []).concat(Object.keys(p.preferences || {}).map(function (k) { return k + '=' + p.preferences[k]; }));
      kids.push(h('div', { className: 'card small', 'data-profile': p.key || '' },
        h('span', { className: 'badge', text: p.kb }), ' ', bits.filter(Boolean).join('; ') || '—'));
    });
    kids.push(h('h3', { text: T('people.episodes') }));
    if (!doc.episodes.length) kids.push(h('div', { className: 'empty', text: T('people.no_episodes') }));
    else {
      kids.push(h('table', { className: 'grid', id: 'people-episodes' },
        h('thead', null, h('tr', null, ['people.col_id', 'people.col_chat', 'people.col_kb', 'people.col_status', 'people.col_at', 'people.col_content']
          .map(function (k) { return h('th', { text: T(k) }); }))),
        h('tbody', null, doc.episodes.map(function (e) {
          return h('tr', { 'data-episode-id': e.id },
            h('td', { className: 'mono nowrap', text: e.id }), h('td', { className: 'mono nowrap', text: e.chat }),
            h('td', { className: 'mono nowrap', text: e.kb }), h('td', { className: 'nowrap' }, statusBadge(e.status)),
            h('td', { className: 'nowrap' }, timeEl(e.recorded_at)), h('td', { text: e.content }));
        }))));
    }
    fill(body, kids);
  };
