  // ------------------------------------------------------------------------------ usage ledger
  LOADERS.usage = function () {
    return call('/usage').then(function (d) { S.cache.usage = d; RENDERERS.usage(); });
  };

  function usageTools(tools) {
    var names = Object.keys(tools || {});
    return names.length ? names.map(function (k) { return k + (tools[k] > 1 ? ' ×' + tools[k] : ''); }).join(', ') : '—';
  }

  RENDERERS.usage = function () {
    var d = S.cache.usage;
    if (!d) return;
    var body = panelBody('usage');
    var t = d.today || {};
    var kids = [
      h('div', { className: 'card stack', id: 'usage-today' },
        h('h3', { text: T('usage.today', { date: dash(t.date) }) }),
        kv([
          [T('usage.turns'), dash(t.turns)],
          [T('usage.memories'), dash(t.memories)],
          [T('usage.tokens'), dash(t.tokens)],
          [T('usage.host_calls'), dash(t.host_calls)],
          [T('usage.hook_ms'), dash(t.hook_ms)],
          [T('usage.tool_turns'), dash(t.tool_turns)],
          [T('usage.tool_calls'), dash(t.tool_calls)],
        ])),
    ];
    var turns = d.turns || [];
    kids.push(h('h3', { text: T('usage.last_turns') }));
    if (!turns.length) kids.push(h('div', { className: 'empty', text: T('usage.none') }));
    else {
      kids.push(h('table', { className: 'grid', id: 'usage-turns' },
        h('thead', null, h('tr', null, ['usage.at', 'usage.query_id', 'usage.memories', 'usage.tokens', 'usage.host_calls', 'usage.hook_ms', 'usage.tools']
          .map(function (k) { return h('th', { text: T(k) }); }))),
        h('tbody', null, turns.map(function (r) {
          return h('tr', { 'data-query-id': r.query_id == null ? '' : String(r.query_id) },
            h('td', { className: 'nowrap' }, timeEl(r.at)), h('td', { className: 'mono', text: dash(r.query_id) }),
            h('td', { text: dash(r.memories) }), h('td', { text: dash(r.tokens) }), h('td', { text: dash(r.host_calls) }),
            h('td', { text: dash(r.hook_ms) }), h('td', { className: 'mono', text: usageTools(r.tools) }));
        }))));
    }
    var days = d.days || [];
    kids.push(h('h3', { text: T('usage.days') }));
    if (!days.length) kids.push(h('div', { className: 'empty', text: T('usage.none') }));
    else {
      kids.push(h('table', { className: 'grid', id: 'usage-days' },
        h('thead', null, h('tr', null, ['usage.date', 'usage.turns', 'usage.memories', 'usage.tokens', 'usage.host_calls', 'usage.hook_ms', 'usage.tool_turns']
          .map(function (k) { return h('th', { text: T(k) }); }))),
        h('tbody', null, days.map(function (r) {
          return h('tr', { 'data-date': r.date },
            h('td', { className: 'nowrap mono', text: r.date }), h('td', { text: dash(r.turns) }), h('td', { text: dash(r.memories) }),
            h('td', { text: dash(r.tokens) }), h('td', { text: dash(r.host_calls) }), h('td', { text: dash(r.hook_ms) }),
            h('td', { text: dash(r.tool_turns) }));
        }))));
    }
    var lim = d.limits || {};
    kids.push(h('div', { className: 'small muted', text: T('usage.limits', { turns: dash(lim.turns), days: dash(lim.days), bytes: dash(lim.bytes) }) }));
    fill(body, kids);
  };
