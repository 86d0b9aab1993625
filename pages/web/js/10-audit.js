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
