  // ------------------------------------------------------------------------------ tabs
  var LOADERS = {};
  var RENDERERS = {};

  function showTab(name) {
    S.tab = name;
    Array.prototype.forEach.call(document.querySelectorAll('#tabs [role="tab"]'), function (b) {
      b.setAttribute('aria-selected', b.getAttribute('data-tab') === name ? 'true' : 'false');
    });
    Array.prototype.forEach.call(document.querySelectorAll('.panel'), function (p) { p.hidden = p.id !== 'panel-' + name; });
    if (!S.scope && name !== 'people' && name !== 'move') { // People names a person, Move the installation: no memory space
      var body = panelBody(name);
      if (body) fill(body, [h('div', { className: 'empty', text: T('scope.pick_first') })]);
      return;
    }
    if (S.cache[name] !== undefined) RENDERERS[name] && RENDERERS[name]();
    else if (LOADERS[name]) run(name, LOADERS[name]);
    else if (RENDERERS[name]) RENDERERS[name]();
  }

  function rerender() {
    renderKbs();
    renderScopes();
    renderDerived();
    renderBanner();
    renderCounts();
    renderFences();
    if (S.scope && RENDERERS[S.tab]) RENDERERS[S.tab]();
    else showTab(S.tab);
  }
