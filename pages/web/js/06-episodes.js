  // ------------------------------------------------------------------------------ episodes
  function epFilters() {
    return {
      speaker: S.ep.speaker,
      time_from: toIso(S.ep.from) || undefined,
      time_until: toIso(S.ep.until) || undefined,
      as_of: toIso(S.ep.asOf) || undefined,
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
        e.valid_window ? [T('f.valid_window'), e.valid_window, 'mono'] : null,
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
