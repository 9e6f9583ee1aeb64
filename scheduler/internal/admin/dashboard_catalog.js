// A job's place in the catalog (the spec card and the conflict banner)
// and its audit: every nominal slot of a window with its fate.

const short = (fp) => fp && fp.length > 16 ? fp.slice(0, 15) + '…' : fp;

// paintSpec fills dl with the spec in force of a job's catalog entry c.
function paintSpec(dl, c) {
  const kv = (k, ...v) => [h('dt', { text: k }), h('dd', {}, v)];
  if (!c.in_force) {
    dl.replaceChildren(...kv('Spec in force', h('span', { class: 'muted', id: 'spec-none', text: 'none yet: no replica has enrolled the job with its spec' })),
      ...kv('This replica’s', h('code', { class: 'mono', title: c.own.fingerprint, text: short(c.own.fingerprint) })));
    return;
  }
  const f = c.in_force;
  dl.replaceChildren(...[
    kv('Status', c.status === 'conflict' ? h('span', { class: 'bad', text: 'this replica’s spec differs: it runs none of the job’s slots' })
      : h('span', { class: 'good', text: 'this replica’s spec is in force' })),
    kv('Fingerprint', h('code', { class: 'mono', id: 'spec-fingerprint', title: f.fingerprint, text: f.fingerprint })),
    kv('Source', h('span', { id: 'spec-source', text: f.replica || '—' }), f.since ? [' · ', when(f.since)] : ''),
    kv('Revision', h('span', { id: 'spec-revision', text: f.revision || 'none' })),
    kv('Since', h('span', { class: 'mono', text: utc(f.since) })),
    f.readable ? [kv('Schedule', h('code', { text: f.schedule }), ' · ', f.zone), f.retired ? kv('Retired', h('span', { class: 'warn', text: 'removed from the configuration: no slot is the job’s' })) : '']
      : kv('Body', h('span', { class: 'muted', text: 'written by a newer build: this one cannot read it' })),
    kv('Carriers', c.carriers.length ? c.carriers.map((x, i) => [i ? ', ' : '', h('span', { text: x.replica, title: 'enrolled ' + utc(x.enrolled) })]) : h('span', { class: 'muted', text: 'none' })),
  ].flat(Infinity));
}

// paintConflict fills banner while this replica's spec of the job is not
// the one in force, or other replicas do not carry it.
function paintConflict(banner, c) {
  const others = c.others.filter((o) => !o.spec);
  banner.hidden = !c.conflict && !others.length;
  banner.replaceChildren();
  if (c.conflict) {
    add(banner, h('b', { text: 'Spec conflict: ' }), 'this replica’s spec ', h('code', { text: c.conflict.own }),
      ' is not the spec in force ', h('code', { text: c.conflict.in_force }), ' (from ', c.in_force.replica || '?',
      c.in_force.revision ? ', revision ' + c.in_force.revision : '', '). This replica runs none of its slots and refuses triggers. What differs (this replica → in force):',
      h('ul', { id: 'spec-differs' }, c.conflict.differs.map((d) => h('li', { class: 'mono', text: d }))));
  }
  if (others.length) {
    add(banner, h('p', { class: 'small' }, 'Live replicas not carrying the spec in force (another spec, or not this job): ',
      others.map((o, i) => [i ? ', ' : '', h('b', { text: o.replica })]), '.'));
  }
}

// The audit's windows, and its fates as people read them.
const AUDIT_WINDOWS = [['3600', 'last hour'], ['86400', 'last day']];
const AUDIT_ROWS = 100; // the newest listed; the summary counts them all
const FATE_CLASS = { done: 'st-ok', skipped: 'st-skip', running: 'st-run', retrying: 'st-run', unaccounted: 'bad', pending: 'muted', 'beyond history': 'muted', 'before record': 'muted' };

function auditPart(path) {
  const pick = h('select', { id: 'audit-window' }, AUDIT_WINDOWS.map(([v, t]) => h('option', { value: v, text: t })));
  const only = h('input', { id: 'audit-unaccounted', type: 'checkbox' });
  let last = null;
  const sum = h('p', { id: 'audit-summary', class: 'small' });
  const note = h('p', { id: 'audit-history', class: 'small muted' });
  const body = h('tbody', { id: 'audit-body' });
  const ACOLS = ['Slot', 'Fate', 'Outcome', 'Attempts', 'Holder', 'Fence', 'Spec', 'Reason'];
  const root = h('section', { id: 'audit' },
    h('h2', { text: 'Audit' }),
    h('p', { class: 'small muted', text: 'Every slot of the window under the spec in force then, with its fate: what its marker says, or unaccounted when no replica recorded it.' }),
    h('form', { class: 'action', id: 'audit-form' }, h('label', {}, 'Window', pick),
      h('label', { class: 'check' }, h('span', { text: 'Unaccounted only' }), only)), sum, note,
    h('div', { class: 'table-wrap' }, h('table', { class: 'stack', id: 'audit-table' },
      h('thead', {}, h('tr', {}, ACOLS.map((t) => h('th', { scope: 'col', text: t })))), body)));
  root.querySelector('form').addEventListener('submit', (ev) => ev.preventDefault());
  pick.addEventListener('change', () => kick());
  only.addEventListener('change', () => { if (last) paint(last); });
  function paint(a) {
    last = a;
    const fates = Object.entries(a.counts).sort((x, y) => y[1] - x[1]);
    sum.replaceChildren();
    add(sum, a.slots.length + ' slots from ' + utc(a.truncated ? a.listed_from : a.from) + ' to ' + utc(a.to) + (fates.length ? ': ' : '.'),
      fates.map(([f, n], i) => [i ? ' · ' : '', h('span', { class: FATE_CLASS[f] || '', text: n + ' ' + f })]),
      a.truncated ? h('span', { class: 'warn', text: ' · too many slots: only those from ' + utc(a.listed_from) + ' are listed and counted' }) : '');
    const from = Date.parse(a.from), hf = Date.parse(a.history_from);
    note.textContent = a.history_from ? (hf > from ? 'History ends at ' + utc(a.history_from) + ': older slots without a marker may have run and had it pruned (beyond history).'
      : 'History is kept from ' + utc(a.history_from) + ', before this window.') : '';
    const all = a.slots.filter((x) => !only.checked || x.fate === 'unaccounted');
    const slots = all.slice().reverse().slice(0, AUDIT_ROWS);
    body.replaceChildren(...slots.map((x) => h('tr', { class: x.fate === 'unaccounted' ? 'unaccounted' : '', dataset: { slot: x.slot, fate: x.fate } },
      h('td', { dataset: { label: 'Slot' } }, h('span', { class: 'mono', text: utc(x.slot) }), x.origin ? [' ', h('span', { class: 'badge', text: x.origin })] : ''),
      h('td', { dataset: { label: 'Fate' }, class: FATE_CLASS[x.fate] || '', text: x.fate }),
      h('td', { dataset: { label: 'Outcome' }, text: x.outcome || '' }),
      h('td', { dataset: { label: 'Attempts' }, class: 'num', text: x.attempts || '' }),
      h('td', { dataset: { label: 'Holder' }, text: x.holder || '' }),
      h('td', { dataset: { label: 'Fence' }, class: 'num', text: x.fence || '' }),
      h('td', { dataset: { label: 'Spec' }, class: 'mono small', title: x.spec || '', text: x.spec ? short(x.spec) : 'none (manual)' }),
      h('td', { dataset: { label: 'Reason' } }, x.error ? h('div', { class: 'errtext', text: x.error, title: x.error }) : '', x.reason ? h('div', { class: 'reason small', text: x.reason }) : ''))));
    if (all.length > slots.length) body.append(h('tr', {}, h('td', { colspan: ACOLS.length, class: 'muted', text: 'The newest ' + slots.length + ' of ' + all.length + ' slots are listed.' })));
    if (!all.length) body.append(h('tr', {}, h('td', { colspan: ACOLS.length, class: 'muted', text: only.checked ? 'No slot unaccounted in this window.' : 'No slot in this window.' })));
  }
  return {
    root,
    async refresh() {
      const from = new Date(now() - Number(pick.value) * 1000).toISOString().replace(/\.\d+Z$/, 'Z');
      try {
        paint((await api('GET', path + '/audit?from=' + enc(from))).data);
      } catch (e) {
        if (e.status === 503) throw e;
        sum.replaceChildren(h('span', { class: 'muted', text: 'No audit: ' + e.message }));
        note.textContent = '';
        body.replaceChildren();
      }
    },
  };
}
