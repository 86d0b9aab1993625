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
