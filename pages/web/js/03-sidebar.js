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
      var iso = TV('iso', (kb.isolation || 'session'));
      var label = kb.name ? T('space.kb_option_named', { name: kb.name, kb: kb.kb_id.slice(0, 8), isolation: iso })
        : T('space.kb_option', { kb: kb.kb_id, isolation: iso });
      opts.push(h('option', { value: kb.kb_id, title: kb.kb_id, text: label }));
    });
    fill(sel, opts);
    if (current && (S.kbs || []).some(function (k) { return k.kb_id === current; })) sel.value = current;
    else if (!current && S.kbs && S.kbs.length === 1) sel.value = S.kbs[0].kb_id;
  }

  function sourceLabel(src) { return TV('src', src); }

  // Who was seen speaking in a space: the first few speaker ids, then how many more.
  function speakersLine(speakers) {
    if (!speakers.length) return null;
    var shown = speakers.slice(0, 3).join(', ');
    var more = speakers.length > 3 ? T('space.speakers_more', { n: speakers.length - 3 }) : '';
    return h('span', { className: 'small', 'data-role': 'speakers', text: T('space.speakers', { speakers: shown }) + more });
  }

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
      speakersLine(s.speakers || []),
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
