  // ------------------------------------------------------------------------------ documents
  function copyText(area) {
    area.focus();
    area.select();
    var ok = false;
    try { ok = document.execCommand('copy'); } catch (e) { ok = false; }
    if (ok) { toast(T('dl.copied')); return; }
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(area.value).then(
        function () { toast(T('dl.copied')); },
        function () { toast(T('dl.copy_failed'), true); });
    } else {
      toast(T('dl.copy_failed'), true);
    }
  }

  // A JSON document shown as text with a Copy button (the dashboard's sandboxed frame saves no files).
  function documentBox(kind, filename, doc, summary) {
    var text = JSON.stringify(doc, null, 2);
    var area = h('textarea', { readonly: true, rows: '12', className: 'mono', 'data-role': 'json', 'aria-label': filename });
    area.value = text;
    return h('div', { className: 'card stack', 'data-doc': kind },
      h('h3', { text: T('dl.ready', { name: filename }) }),
      summary,
      h('div', { className: 'row' },
        h('button', { type: 'button', className: 'primary', 'data-action': 'copy', text: T('dl.copy'),
          on: { click: function () { copyText(area); } } }),
        h('span', { className: 'small muted', text: T('dl.hint') })),
      area);
  }
