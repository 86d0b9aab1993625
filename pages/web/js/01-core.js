  // ------------------------------------------------------------------------------ helpers
  function $(id) { return document.getElementById(id); }

  // The catalogs are inlined by the page build: the page SDK's own fetch of ./i18n/*.json cannot
  // load from the blob: document the dashboard shows.
  var CATALOGS = null;
  function catalogs() {
    if (CATALOGS) return CATALOGS;
    try { CATALOGS = JSON.parse($('ltm-catalogs').textContent) || {}; } catch (e) { CATALOGS = {}; }
    return CATALOGS;
  }

  function T(key, args) {
    var own = catalogs()[langKey()] || {};
    var s = own[key] != null ? own[key] : (catalogs().en_US || {})[key];
    s = String(s != null ? s : key);
    if (args) {
      s = s.replace(/\{(\w+)\}/g, function (m, k) { return args[k] != null ? String(args[k]) : m; });
    }
    return s;
  }

  // Static labels: data-i18n elements get their text (or one allowed attribute) from the catalog.
  var I18N_ATTRS = ['placeholder', 'title', 'alt', 'aria-label'];
  function applyI18n() {
    var nodes = document.querySelectorAll('[data-i18n]');
    for (var i = 0; i < nodes.length; i++) {
      var el = nodes[i];
      var text = T(el.getAttribute('data-i18n'));
      if (text === el.getAttribute('data-i18n')) continue;
      var attr = el.getAttribute('data-i18n-attr');
      if (attr) { if (I18N_ATTRS.indexOf(attr) !== -1) el.setAttribute(attr, text); }
      else el.textContent = text;
    }
  }

  // A translated label for a stored enum value; an unknown value is shown as itself.
  function TV(prefix, value) {
    var key = prefix + '.' + value;
    var s = T(key);
    return s === key ? String(value) : s;
  }

  function append(node, kids) {
    for (var i = 0; i < kids.length; i++) {
      var k = kids[i];
      if (k == null || k === false) continue;
      if (Array.isArray(k)) append(node, k);
      else if (typeof k === 'object' && k.nodeType) node.appendChild(k);
      else node.appendChild(document.createTextNode(String(k)));
    }
    return node;
  }

  // Build an element. props: text, className, on:{event: fn}, hidden, disabled, other attributes.
  function h(tag, props) {
    var node = document.createElement(tag);
    var p = props || {};
    Object.keys(p).forEach(function (k) {
      var v = p[k];
      if (v == null || v === false) return;
      if (k === 'text') node.textContent = String(v);
      else if (k === 'className') node.className = v;
      else if (k === 'on') Object.keys(v).forEach(function (ev) { node.addEventListener(ev, v[ev]); });
      else if (k === 'value') node.value = String(v);
      else if (/^on/i.test(k)) throw new Error('inline event handlers are not allowed');
      else node.setAttribute(k, v === true ? '' : String(v));
    });
    return append(node, Array.prototype.slice.call(arguments, 2));
  }

  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }
  function fill(node, kids) { return append(clear(node), kids); }
  function errText(e) { return e && e.message ? e.message : String(e); }
  function langCode() { return (window.langbot && langbot.language) || 'en-US'; }
  // 'zh-Hans' -> 'zh_Hans'; a bare or regional Chinese tag follows the script LangBot uses for it.
  function langKey() {
    var code = String(langCode()).replace(/-/g, '_');
    var have = catalogs();
    if (have[code]) return code;
    if (/^zh_(TW|HK|MO|Hant)/i.test(code) && have.zh_Hant) return 'zh_Hant';
    if (/^zh/i.test(code) && have.zh_Hans) return 'zh_Hans';
    var base = code.split('_')[0];
    for (var k in have) { if (k.split('_')[0] === base) return k; }
    return 'en_US';
  }
  function dash(v) { return v == null || v === '' ? '—' : String(v); }

  function fmtTime(iso) {
    if (!iso) return '—';
    var d = new Date(iso);
    if (isNaN(d.getTime())) return String(iso);
    try {
      return d.toLocaleString(langCode(), { dateStyle: 'medium', timeStyle: 'medium' });
    } catch (e) {
      return d.toISOString();
    }
  }

  function timeEl(iso) { return h('time', { datetime: iso || null, title: iso || null, text: fmtTime(iso) }); }

  function toIso(local) {
    if (!local) return '';
    var d = new Date(local);
    return isNaN(d.getTime()) ? '' : d.toISOString();
  }

  var toastTimer = null;
  function toast(text, bad) {
    var t = $('toast');
    t.textContent = text;
    t.className = 'small ' + (bad ? 'error' : 'ok-text');
    if (toastTimer) clearTimeout(toastTimer);
    toastTimer = setTimeout(function () { t.textContent = ''; t.className = 'small'; }, 8000);
  }

  // The host passes the component's PageResponse on as it is ({data, error}) in some versions and
  // unwraps it (data, or a rejection with error) in others: accept both, and make a refusal throw.
  function unwrap(v) {
    if (v && typeof v === 'object' && !Array.isArray(v) && 'error' in v &&
        Object.keys(v).every(function (k) { return k === 'data' || k === 'error'; })) {
      if (v.error) throw new Error(String(v.error));
      return v.data;
    }
    return v;
  }

  function call(endpoint, body, method) {
    var payload = Object.assign({ lang: langCode() }, body || {});
    if (S.scope && payload.scope === undefined) payload.scope = S.scope;
    return langbot.api(endpoint, payload, method || 'POST').then(unwrap);
  }

  function panel(name) { return $('panel-' + name); }
  function panelBody(name) { return panel(name).querySelector('.body'); }
  function panelError(name, message) {
    var box = panel(name).querySelector(':scope > .error');
    if (!box) return;
    box.textContent = message || '';
    box.hidden = !message;
  }

  // Run an action for a panel: busy state, errors shown in the panel (never a blank panel).
  function run(name, fn) {
    var p = panel(name);
    p.classList.add('busy');
    p.setAttribute('aria-busy', 'true');
    panelError(name, '');
    return Promise.resolve()
      .then(fn)
      .catch(function (e) { panelError(name, errText(e)); })
      .then(function () { p.classList.remove('busy'); p.removeAttribute('aria-busy'); });
  }

  function kv(rows) {
    var dl = h('dl', { className: 'kv' });
    rows.forEach(function (r) {
      if (!r) return;
      append(dl, [h('dt', { text: r[0] }), h('dd', { className: r[2] || null }, r[1])]);
    });
    return dl;
  }

  function statusBadge(status) {
    return h('span', { className: 'badge ' + status, 'data-status': status, text: TV('status', status) });
  }

  // Two-step confirmation inside the page (the host sandbox allows no modal dialogs).
  function confirmButton(key, label, confirmLabel, action, extra) {
    if (!S.pending[key]) {
      return h('button', {
        type: 'button', className: 'danger', 'data-action': key.split(':')[0], text: label,
        on: { click: function () { S.pending[key] = true; rerender(); } },
      });
    }
    var reason = h('input', {
      type: 'text', maxlength: '500', className: 'grow', 'data-role': 'reason',
      placeholder: T('action.reason_ph'), 'aria-label': T('action.reason_ph'),
    });
    return h('span', { className: 'row grow' },
      extra || null,
      reason,
      h('button', {
        type: 'button', className: 'danger confirm', 'data-action': 'confirm', text: confirmLabel,
        on: { click: function () { delete S.pending[key]; action(reason.value); } },
      }),
      h('button', {
        type: 'button', 'data-action': 'cancel', text: T('action.cancel'),
        on: { click: function () { delete S.pending[key]; rerender(); } },
      }));
  }
