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
