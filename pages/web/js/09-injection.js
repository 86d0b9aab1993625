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
    var eps = d.episodes.length ? h('ol', null, d.episodes.map(function (e) {
      return h('li', { 'data-episode-id': e.id },
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
      h('details', null, h('summary', { text: T('inj.raw') }), h('pre', { className: 'raw', text: JSON.stringify(s, null, 2) })),
    ]);
  };
