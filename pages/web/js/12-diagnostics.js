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
