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
      S.ep.asOf = $('ep-as-of').value;
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
    $('usage-reload').addEventListener('click', function () { if (S.scope) run('usage', LOADERS.usage); });
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
    $('people-find').addEventListener('click', findPerson);
    $('people-sender').addEventListener('keydown', function (ev) { if (ev.key === 'Enter') findPerson(); });
    $('people-bot').addEventListener('focus', function () { if (!$('people-bot').value) $('people-bot').value = $('f-bot').value; });
    $('move-backup').addEventListener('click', moveBackup);
    $('move-restore').addEventListener('click', moveRestoreFile);
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
      applyI18n();
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
      applyI18n();
      $('toast').textContent = '';
      rerender();
    });
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
