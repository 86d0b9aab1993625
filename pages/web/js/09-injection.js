  // ------------------------------------------------------------------------------ injection
  LOADERS.injection = function () {
    return call('/injection').then(function (d) { S.cache.injection = d; RENDERERS.injection(); });
  };

  RENDERERS.injection = function () {
    var d = S.cache.injection;
    if (!d) return;
    var body = panelBody('injection');
    if (!d.snapshot) { fill(body, [h('div', { className: 'empty', text: T('inj.none') })]); return; }
    var s = d.snapshot;
    var speaker = s.speaker && typeof s.speaker === 'object' ? [s.speaker.id, s.speaker.name].filter(Boolean).join(' · ') : s.speaker;
    var traced = traceIndex(d.trace);
    var eps = d.episodes.length ? h('ol', null, d.episodes.map(function (e) {
      return h('li', { 'data-episode-id': e.id },
        traced[e.id] ? whyThis(traced[e.id]) : null,
        h('span', { className: 'mono muted', text: e.id + ' ' }),
        e.shown_as ? h('span', { className: 'muted', 'data-shown-as': e.shown_as, text: T('inj.shown_as', { ref: e.shown_as }) + ' ' }) : null,
        e.missing ? h('span', { className: 'muted', text: T('inj.missing') })
          : h('span', null, statusBadge(e.status), ' ', h('span', { text: e.content })));
    })) : h('span', { className: 'muted', text: T('inj.no_episodes') });
    fill(body, [
      h('div', { className: 'card stack' },
        h('h3', { text: T('inj.title') }),
        kv([
          [T('inj.at'), timeEl(s.at)],
          [T('inj.injected'), s.injected ? T('yes') : T('no')],
          [T('inj.blocks'), dash(s.blocks)],
          [T('inj.chars'), dash(s.chars)],
          [T('inj.tokens'), dash(s.tokens)],
          [T('inj.block_tokens'), dash(s.block_tokens)],
          [T('inj.speaker'), dash(speaker)],
          [T('inj.profiles'), Array.isArray(s.profiles_used) && s.profiles_used.length ? s.profiles_used.map(function (k) { return TV('inj.profile', k); }).join(', ') : '—'],
          [T('inj.query_id'), dash(s.query_id)],
        ])),
      h('div', { className: 'card stack' }, h('h3', { text: T('inj.episodes') }), eps),
      d.trace ? nearMisses(d.trace, 'inj-near-misses') : null,
      whyForm(),
      h('details', null, h('summary', { text: T('inj.raw') }), h('pre', { className: 'raw', text: JSON.stringify(s, null, 2) })),
    ]);
  };

  // ------------------------------------------------------------------------------ recall trace
  function traceIndex(trace) {
    var out = {};
    ((trace && trace.rows) || []).forEach(function (r) { out[r.id] = r; });
    return out;
  }

  function num(v) { return typeof v === 'number' ? v.toFixed(2) : '—'; }

  function signals(r) {
    var parts = [
      T('trace.rank') + ' ' + (r.rank == null ? '—' : '#' + r.rank),
      T('trace.score') + ' ' + num(r.score),
      T('trace.dense') + ' ' + num(r.dense),
      T('trace.lexical') + ' ' + num(r.lexical),
      T('trace.window') + ' ' + (r.window ? T('yes') : T('no')),
      T('trace.recency') + ' ' + num(r.recency),
      T('trace.trust') + ' ' + (r.trust || '—'),
      T('trace.neighbourhood') + ' ' + num(r.neighbourhood),
    ];
    if (r.rerank) parts.push(T('trace.rerank', { place: r.rerank }));
    return parts.join(' · ');
  }

  function whyThis(r) {
    return h('details', { className: 'why', 'data-why': r.id },
      h('summary', { text: T('trace.why') }),
      h('div', { className: 'muted', text: signals(r) }));
  }

  function nearMisses(trace, id) {
    var misses = (trace.rows || []).filter(function (r) { return !r.injected; });
    var body = misses.length ? h('ol', null, misses.map(function (r) {
      return h('li', { 'data-near-miss': r.id, 'data-reason': r.reason },
        h('span', { className: 'mono muted', text: r.id + ' ' }),
        h('strong', { text: TV('trace.reason', r.reason) + ' ' }),
        h('span', { text: r.preview + ' ' }),
        h('div', { className: 'muted', text: signals(r) }));
    })) : h('span', { className: 'muted', text: T('trace.no_misses') });
    return h('div', { className: 'card stack', id: id },
      h('h3', { text: T('trace.near_misses') }),
      trace.omitted ? h('span', { className: 'muted', text: T('trace.omitted', { n: trace.omitted }) }) : null,
      body);
  }

  function whyForm() {
    var input = h('input', { type: 'search', id: 'why-query', className: 'grow', maxLength: 500, placeholder: T('trace.ask_ph') });
    var out = h('div', { className: 'stack', id: 'why-result' });
    var go = h('button', { type: 'button', className: 'primary', id: 'why-run', text: T('trace.ask') });
    go.addEventListener('click', function () {
      var q = input.value.trim();
      if (!q) return;
      run('injection', function () {
        return call('/injection/why', { query: q }).then(function (d) {
          if (!d.trace) { fill(out, [h('span', { className: 'muted', text: T('trace.none') })]); return; }
          var rows = d.trace.rows.filter(function (r) { return r.injected; });
          fill(out, [
            h('div', { className: 'card stack', id: 'why-injected' }, h('h3', { text: T('trace.would_inject') }),
              rows.length ? h('ol', null, rows.map(function (r) {
                return h('li', { 'data-why-row': r.id }, h('span', { className: 'mono muted', text: r.id + ' ' }),
                  h('span', { text: r.preview }), h('div', { className: 'muted', text: signals(r) }));
              })) : h('span', { className: 'muted', text: T('inj.no_episodes') })),
            nearMisses(d.trace, 'why-near-misses'),
          ]);
        });
      });
    });
    return h('div', { className: 'card stack' }, h('h3', { text: T('trace.ask_title') }), h('div', { className: 'row' }, input, go), out);
  }
