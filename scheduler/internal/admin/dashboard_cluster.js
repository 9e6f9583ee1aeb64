// The cluster view: the store, the cluster pause, the replicas, the duties.

function clusterView() {
  const store = h('dl', { class: 'kv', id: 'store' });
  const pauseState = h('div', { id: 'cluster-pause' });
  const reason = h('input', { id: 'cluster-reason', type: 'text', required: true, maxLength: 1000, placeholder: 'why (required)' });
  const by = h('input', { id: 'cluster-by', type: 'text', maxLength: 1000, placeholder: 'your name (optional)' });
  const submit = gate(h('button', { type: 'submit', id: 'cluster-submit', text: 'Pause the whole cluster…' }), 'admin');
  const form = h('form', { class: 'action', id: 'cluster-form', noValidate: true }, h('label', {}, 'Reason', reason), h('label', {}, 'By', by), submit);
  const pmsg = h('p', { class: 'msg', id: 'cluster-msg', role: 'status' });
  const confirmBox = h('div', { class: 'confirm', id: 'cluster-confirm', hidden: true });
  const replicas = h('tbody', { id: 'replicas-body' });
  const duties = h('tbody', { id: 'duties-body' });
  const errors = h('ul', { id: 'cluster-errors', class: 'bad' });
  let paused = false;
  async function send(pause) {
    try {
      await api('POST', pause ? '/api/pause' : '/api/resume', { reason: reason.value, by: by.value || undefined });
      msg(pmsg, pause ? 'The cluster is paused.' : 'The cluster is resumed.', true);
      reason.value = '';
      kick();
    } catch (e) { msg(pmsg, (pause ? 'Pause' : 'Resume') + ' refused: ' + e.message); }
  }
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    if (!reason.value.trim()) { msg(pmsg, 'Say why: a reason is required.'); reason.focus(); return; }
    if (paused) { send(false); return; }
    // Pausing every job on every replica takes a second, deliberate click.
    const yes = h('button', { type: 'button', class: 'danger', id: 'cluster-confirm-yes', text: 'Pause every job on every replica' });
    const no = h('button', { type: 'button', text: 'Cancel' });
    confirmBox.replaceChildren(h('p', {}, 'No job will start a scheduled slot on any replica until the cluster is resumed. Reason: “', reason.value, '”.'), yes, ' ', no);
    confirmBox.hidden = false;
    yes.addEventListener('click', () => { confirmBox.hidden = true; send(true); });
    no.addEventListener('click', () => { confirmBox.hidden = true; msg(pmsg, 'Not paused.', true); });
    yes.focus();
  });
  const table = (id, cols, body) => h('div', { class: 'table-wrap' }, h('table', { class: 'stack', id },
    h('thead', {}, h('tr', {}, cols.map((t) => h('th', { scope: 'col', text: t })))), body));
  const RCOLS = ['Replica', 'Live', 'Version', 'Revision', 'Started', 'Last seen', 'Slots running', 'Duties led'];
  const DCOLS = ['Duty', 'Leader', 'Fence', 'Since', 'This replica'];
  const root = h('section', { id: 'cluster-view' },
    h('h1', { text: 'Cluster' }),
    errors,
    h('div', { class: 'cards' },
      h('div', { class: 'card' }, h('h2', { text: 'Store' }), store),
      h('div', { class: 'card' }, h('h2', { text: 'Cluster pause' }), pauseState, form, confirmBox, pmsg)),
    h('h2', { text: 'Replicas' }), table('replicas-table', RCOLS, replicas),
    h('h2', { text: 'Duties' }), table('duties-table', DCOLS, duties));

  function paint(c) {
    const kv = (k, ...v) => [h('dt', { text: k }), h('dd', {}, v)];
    store.replaceChildren(...[
      kv('Kind', c.store.kind),
      kv('Health', c.store.ok ? h('span', { class: 'good', text: 'ok · answered in ' + (c.store.latency_ms < 0.1 ? '< 0.1' : c.store.latency_ms.toFixed(1)) + ' ms' })
        : h('span', { class: 'bad', id: 'store-error', text: 'unreachable: ' + c.store.error })),
      kv('Slots running', c.running + (c.running_more ? '+' : '')),
      kv('Answered by', c.replica + ' · version ' + c.version),
    ].flat());
    paused = c.paused;
    pauseState.replaceChildren(c.paused ? pauseText(c.pause, 'The whole cluster is')
      : h('p', { class: 'good', text: 'Not paused.' }),
    c.paused_jobs.length ? h('p', { class: 'small' }, 'Jobs paused on their own: ', c.paused_jobs.map((j, i) => [i ? ', ' : '', h('a', { href: '#/jobs/' + enc(j), text: j })])) : '');
    submit.textContent = c.paused ? 'Resume the cluster' : 'Pause the whole cluster…';
    submit.className = c.paused ? 'primary' : 'danger';
    errors.replaceChildren(...(c.errors || []).map((e) => h('li', { text: e })));
    replicas.replaceChildren(...c.replicas.map((r) => h('tr', { dataset: { replica: r.name } },
      h('td', { dataset: { label: RCOLS[0] } }, h('b', { text: r.name }), r.this ? [' ', h('span', { class: 'badge', text: 'this replica' })] : ''),
      h('td', { dataset: { label: RCOLS[1] } }, h('span', { class: 'health' }, h('span', { class: 'dot ' + (r.live ? 'live' : 'down'), 'aria-hidden': 'true' }), r.live ? 'live' : 'gone')),
      h('td', { dataset: { label: RCOLS[2] }, class: 'mono', text: r.version || '' }),
      h('td', { dataset: { label: RCOLS[3], col: 'revision' } }, revisionText(r)),
      h('td', { dataset: { label: RCOLS[4] } }, when(r.started)),
      h('td', { dataset: { label: RCOLS[5] } }, r.seen ? when(r.seen) : h('span', { class: 'muted', text: 'no beat yet' })),
      h('td', { dataset: { label: RCOLS[6] }, class: 'num', text: r.running }),
      h('td', { dataset: { label: RCOLS[7] }, text: r.duties.map((d) => d.name + ' (fence ' + d.fence + ')').join(', ') || '—' }))));
    duties.replaceChildren(...c.duties.map((d) => h('tr', { dataset: { duty: d.name } },
      h('td', { dataset: { label: DCOLS[0] } }, h('b', { text: d.name })),
      h('td', { dataset: { label: DCOLS[1] }, class: d.leader ? '' : 'bad', text: d.leader || 'no leader' }),
      h('td', { dataset: { label: DCOLS[2] }, class: 'num', text: d.fence || '' }),
      h('td', { dataset: { label: DCOLS[3] } }, when(d.since)),
      h('td', { dataset: { label: DCOLS[4] }, text: d.here ? (d.here.leading ? 'leading (fence ' + d.here.fence + ')' : 'standing by') + ' · lease ' + d.here.lease : 'does not run it' }))));
    if (!c.duties.length) duties.append(h('tr', {}, h('td', { colspan: DCOLS.length, class: 'muted', text: 'No duties.' })));
  }
  return {
    name: 'cluster', root,
    async refresh() {
      const r = await api('GET', '/api/cluster');
      paintHeader(r.data);
      paint(r.data);
      if (!r.data.store.ok) throw new APIError(503, 'store_unavailable', 'store unreachable: ' + r.data.store.error);
    },
  };
}

// revisionText says which configuration revision a replica runs, as its
// beat says: none for a configuration without revision: (or a build whose
// beats do not say).
function revisionText(r) {
  return r.revision ? h('span', { text: String(r.revision) }) : h('span', { class: 'muted', text: 'none' });
}

function paintHeader(c) {
  $('#replica').textContent = 'replica ' + c.replica;
  if (!location.hash.startsWith('#/jobs/')) document.title = 'slotcron · ' + c.replica;
}
