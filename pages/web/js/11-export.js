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
