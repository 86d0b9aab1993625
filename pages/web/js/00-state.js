  var PAGE_SIZE = 20;

  var S = {
    ready: false,
    wired: false,
    meta: null,
    kbs: null,
    kbsError: '',
    scopes: null,
    scope: null, // the open memory space: {kb_id, session_name, bot_uuid, sender_id}
    derived: null, // keys of the last derive (Advanced)
    overview: null,
    tab: 'profiles',
    cache: {},
    ep: { mode: 'list', page: 1, query: '', status: 'active', speaker: '', from: '', until: '', asOf: '' },
    audit: { page: 1 },
    cand: { page: 1, all: false, tombPage: 1 },
    exportDoc: null,
    auditDoc: null,
    pending: {}, // confirmation state: action key -> true
  };

