  // ------------------------------------------------------------------------------ move (issue 37)
  // The whole installation, not a memory space: Backup reads every memory into one ltm-backup/1
  // document (shown with Copy: the dashboard's sandboxed frame saves no files); Restore takes that
  // document (a file chosen here, or pasted), checks it whole, writes it in chunks with progress,
  // then reads every record back. The same page API as `python -m pages.move_cli`.
  var MOVE_CHUNK = 25; // records per call: LangBot gives a page API call 30 s

  function moveBackup() {
    return run('move', function () {
      S.move = { backup: null, progress: T('move.reading'), report: null };
      RENDERERS.move();
      return call('/backup', { scope: null }).then(function (first) {
        var lines = first.lines.slice();
        var part = 1;
        function next() {
          if (part >= first.parts) return Promise.resolve();
          return call('/backup', { scope: null, backup_id: first.backup_id, part: part }).then(function (d) {
            lines = lines.concat(d.lines);
            part += 1;
            S.move.progress = T('move.progress', { done: part, total: first.parts });
            RENDERERS.move();
            return next();
          });
        }
        return next().then(function () {
          S.move.backup = { filename: first.filename, text: lines.join('\n') + '\n', trailer: JSON.parse(first.trailer) };
          S.move.progress = '';
          RENDERERS.move();
          toast(T('move.backup_done'));
        });
      });
    });
  }

  function moveKbMap() {
    var out = {};
    String($('move-kbmap').value || '').split(/[\s,]+/).forEach(function (pair) {
      var i = pair.indexOf('=');
      if (i > 0) out[pair.slice(0, i)] = pair.slice(i + 1);
    });
    return out;
  }

  function moveRestore(text) {
    var lines = String(text || '').split('\n').filter(function (x) { return x.trim() !== ''; });
    if (lines.length < 2) { panelError('move', T('move.need_file')); return Promise.resolve(); }
    var header = lines[0], trailer = lines[lines.length - 1], body = lines.slice(1, -1);
    var kbMap = moveKbMap();
    return run('move', function () {
      var recs;
      try { recs = body.map(function (x) { return JSON.parse(x); }); }
      catch (e) { throw new Error(T('move.not_json')); }
      S.move = { backup: null, progress: T('move.checking'), report: null };
      RENDERERS.move();
      var sum = { written: 0, skipped: 0, conflicts: 0, verified: 0, missing: 0, differing: 0, gated: 0, redacted: 0, refused: 0, flagged: 0 };
      var expected = JSON.parse(trailer).counts || {};
      function chunks(verify, i) {
        if (i >= body.length) return Promise.resolve();
        var req = { scope: null, lines: [header].concat(body.slice(i, i + MOVE_CHUNK)), kb_map: kbMap, verify: verify };
        return call('/restore', req).then(function (r) {
          Object.keys(r.written).forEach(function (k) { sum.written += r.written[k]; sum.skipped += r.skipped[k]; sum.verified += r.verified[k]; });
          sum.conflicts += r.conflict_count; sum.missing += r.missing_count; sum.differing += r.differing_count;
          if (!verify) { sum.gated += r.gated; sum.redacted += r.redacted || 0; sum.refused += r.refused || 0; sum.flagged += r.flagged || 0; }
          var done = Math.min(i + MOVE_CHUNK, body.length);
          S.move.progress = T(verify ? 'move.verifying' : 'move.restoring', { done: done, total: body.length });
          RENDERERS.move();
          return chunks(verify, i + MOVE_CHUNK);
        });
      }
      return call('/restore/check', {
        scope: null, header: header, trailer: trailer,
        shas: recs.map(function (r) { return r.sha; }), kinds: recs.map(function (r) { return r.k; }),
      }).then(function () { return chunks(false, 0); })
        .then(function () { return chunks(true, 0); })
        .then(function () {
          var want = Object.keys(expected).reduce(function (a, k) { return a + expected[k]; }, 0);
          sum.expected = want;
          sum.ok = sum.missing === 0 && sum.differing === 0 && sum.verified === want;
          S.move.report = sum;
          S.move.progress = '';
          RENDERERS.move();
        });
    });
  }

  function moveRestoreFile() {
    var input = $('move-file');
    var f = input.files && input.files[0];
    if (!f) { return moveRestore($('move-paste').value); }
    return new Promise(function (resolve) {
      var reader = new FileReader();
      reader.onload = function () { resolve(moveRestore(String(reader.result || ''))); };
      reader.onerror = function () { panelError('move', T('move.need_file')); resolve(); };
      reader.readAsText(f);
    });
  }

  RENDERERS.move = function () {
    var body = panelBody('move');
    var x = S.move;
    var kids = [];
    if (!x) { fill(body, [h('div', { className: 'empty', text: T('move.none') })]); return; }
    if (x.progress) kids.push(h('div', { className: 'notice', id: 'move-progress', role: 'status', text: x.progress }));
    if (x.backup) {
      var area = h('textarea', { readonly: true, rows: '10', className: 'mono', id: 'move-backup-text', 'aria-label': x.backup.filename });
      area.value = x.backup.text;
      var c = x.backup.trailer.counts;
      kids.push(h('div', { className: 'card stack', 'data-doc': 'backup' },
        h('h3', { text: T('dl.ready', { name: x.backup.filename }) }),
        kv([[T('move.count_episodes'), String(c.episode)], [T('move.count_kv'), String(c.kv)], [T('move.count_audit'), String(c.audit)],
          [T('move.digest'), x.backup.trailer.digest, 'mono']]),
        h('div', { className: 'row' },
          h('button', { type: 'button', className: 'primary', 'data-action': 'copy', text: T('dl.copy'), on: { click: function () { copyText(area); } } }),
          h('span', { className: 'small muted', text: T('move.copy_hint') })),
        area));
    }
    if (x.report) {
      var r = x.report;
      kids.push(h('div', { className: 'card stack', id: 'move-report', 'data-ok': r.ok ? 'true' : 'false' },
        h('h3', { text: r.ok ? T('move.verified_ok') : T('move.verified_bad') }),
        kv([[T('move.written'), String(r.written)], [T('move.skipped'), String(r.skipped)], [T('move.conflicts'), String(r.conflicts)],
          [T('move.verified'), r.verified + ' / ' + r.expected], [T('move.missing'), String(r.missing)],
          [T('move.differing'), String(r.differing)], [T('move.gated'), String(r.gated)],
          [T('move.redacted'), String(r.redacted || 0)], [T('move.refused'), String(r.refused || 0)], [T('move.flagged'), String(r.flagged || 0)]])));
    }
    fill(body, kids);
  };
