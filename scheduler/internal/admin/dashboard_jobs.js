// The jobs view: every job's health, sortable, filtered by name, paged.

const COLUMNS = [
  { key: 'health', label: 'Status', cmp: (a, b) => RANK[a.health] - RANK[b.health] },
  { key: 'name', label: 'Job', cmp: (a, b) => a.name.localeCompare(b.name) },
  { key: 'recent', label: 'Recent' },
  { key: 'last_success', label: 'Last success', cmp: (a, b) => time(a.last_success) - time(b.last_success) },
  { key: 'last_failure', label: 'Last failure', cmp: (a, b) => time(a.last_failure) - time(b.last_failure) },
  { key: 'consecutive_failures', label: 'Failures in a row', cmp: (a, b) => a.consecutive_failures - b.consecutive_failures },
  { key: 'running', label: 'Running now', cmp: (a, b) => a.running.length - b.running.length },
  { key: 'next', label: 'Next slot', cmp: (a, b) => (Date.parse(a.next) || Infinity) - (Date.parse(b.next) || Infinity) },
];
const time = (m) => m ? Date.parse(m.finished_at || m.slot) : 0;
// specBadge marks a job whose spec here is not the one in force, or that
// live replicas do not all carry.
function specBadge(c) {
  if (c.status === 'conflict') return [' ', h('span', { class: 'badge conflict', title: 'this replica’s spec differs from the spec in force: it runs none of its slots', text: 'spec conflict' })];
  if (c.others.length) return [' ', h('span', { class: 'badge', title: 'live replicas not carrying the spec in force: ' + c.others.map((o) => o.replica).join(', '), text: 'other specs' })];
  return c.status === 'not_enrolled' ? [' ', h('span', { class: 'badge', title: 'no spec in force in the catalog yet', text: 'not enrolled' })] : '';
}

function jobsView() {
  const st = { q: sessionStorage.getItem('slotcron.filter') || '', offset: 0, limit: 100, sort: 'health', dir: 1, jobs: [], total: 0 };
  const filter = h('input', { id: 'filter', type: 'search', value: st.q, placeholder: 'name contains…', autocomplete: 'off' });
  let debounce = 0;
  filter.addEventListener('input', () => {
    clearTimeout(debounce);
    debounce = setTimeout(() => {
      st.q = filter.value;
      st.offset = 0;
      sessionStorage.setItem('slotcron.filter', st.q);
      kick();
    }, 250);
  });
  const summary = h('span', { id: 'jobs-summary', class: 'muted' });
  const banner = h('div', { id: 'cluster-banner', class: 'banner', hidden: true });
  const heads = COLUMNS.map((c) => {
    const th = h('th', { scope: 'col', dataset: { key: c.key } });
    if (c.cmp) {
      th.append(h('button', {
        type: 'button', class: 'sort', text: c.label, on: {
          click: () => {
            st.dir = st.sort === c.key ? -st.dir : 1;
            st.sort = c.key;
            paint();
          },
        },
      }));
    } else th.textContent = c.label;
    return th;
  });
  const body = h('tbody', { id: 'jobs-body' });
  const prev = h('button', { type: 'button', text: '← Previous', on: { click: () => { st.offset = Math.max(0, st.offset - st.limit); kick(); } } });
  const next = h('button', { type: 'button', text: 'Next →', on: { click: () => { st.offset += st.limit; kick(); } } });
  const range = h('span', { class: 'muted' });
  const root = h('section', { id: 'jobs-view' },
    h('h1', { text: 'Jobs' }),
    banner,
    h('div', { class: 'toolbar' }, h('label', { for: 'filter', text: 'Filter by name' }), filter, summary),
    h('div', { class: 'table-wrap' }, h('table', { id: 'jobs-table', class: 'stack' }, h('thead', {}, h('tr', {}, heads)), body)),
    h('div', { class: 'pager' }, prev, range, next));

  function row(j) {
    const cells = {
      health: [dot(j.health), pauseText(j.pause, 'job'), pauseText(j.cluster_pause, 'cluster')],
      name: [h('a', { href: '#/jobs/' + enc(j.name), text: j.name, class: 'job-link' }), specBadge(j.catalog),
        h('div', { class: 'small muted' }, h('code', { class: 'nowrap', text: j.schedule }), ' ', h('span', { class: 'nowrap', text: '· ' + j.timezone }))],
      last_success: j.last_success ? [when(j.last_success.finished_at), h('div', { class: 'small muted', text: dur(j.last_success.duration_seconds) })]
        : h('span', { class: 'muted', text: j.scanned >= 50 ? 'none in the last ' + j.scanned + ' slots' : 'none yet' }),
      last_failure: j.last_failure ? [when(j.last_failure.finished_at || j.last_failure.slot),
        h('div', { class: 'errtext', text: failureText(j.last_failure), title: failureText(j.last_failure) })]
        : h('span', { class: 'muted', text: j.scanned >= 50 ? 'none in the last ' + j.scanned + ' slots' : 'none' }),
      consecutive_failures: h('span', { class: j.consecutive_failures ? 'bad' : 'muted', text: j.consecutive_failures + (j.consecutive_failures_more ? '+' : '') }),
      running: j.running.length ? [j.running.slice(0, 2).map(runningText), j.running.length > 2 ? h('div', { class: 'small', text: '+' + (j.running.length - 2) + ' more' }) : '']
        : h('span', { class: 'muted', text: '—' }),
      next: j.next ? nextSlot(j) : h('span', { class: 'muted', text: j.paused ? 'none while paused' : 'none' }),
      recent: spark(j.recent),
    };
    return h('tr', { class: 'h-' + j.health, dataset: { job: j.name } },
      COLUMNS.map((c) => h('td', { dataset: { label: c.label, col: c.key }, class: c.key === 'consecutive_failures' ? 'num' : '' }, h('div', { class: 'cell' }, cells[c.key]))));
  }
  function paint() {
    const col = COLUMNS.find((c) => c.key === st.sort);
    const jobs = st.jobs.slice().sort((a, b) => col.cmp(a, b) * st.dir || a.name.localeCompare(b.name));
    heads.forEach((th) => th.dataset.key === st.sort ? th.setAttribute('aria-sort', st.dir > 0 ? 'ascending' : 'descending') : th.removeAttribute('aria-sort'));
    body.replaceChildren(...jobs.map(row));
    if (!jobs.length) body.append(h('tr', {}, h('td', { colspan: COLUMNS.length, class: 'muted', text: st.q ? 'No job matches “' + st.q + '”.' : 'No jobs.' })));
    // The counts, like the sorting, are of the page shown: say so unless
    // it holds every job.
    const count = (hl) => st.jobs.filter((j) => j.health === hl).length;
    const whole = st.offset === 0 && st.jobs.length >= st.total;
    summary.textContent = st.total + ' jobs · ' + (whole ? '' : 'on this page: ') + count('failing') + ' failing · ' +
      count('stalled') + ' stalled · ' + count('running') + ' running · ' + count('paused') + ' paused';
    range.textContent = st.total ? (st.offset + 1) + '–' + (st.offset + st.jobs.length) + ' of ' + st.total : '';
    prev.disabled = st.offset === 0;
    next.disabled = st.offset + st.jobs.length >= st.total;
    const cp = st.clusterPause;
    banner.hidden = !cp;
    banner.replaceChildren();
    if (cp) add(banner, 'The whole cluster is paused', cp.by ? ' by ' + cp.by : '',
      cp.reason ? ': “' + cp.reason + '”' : '', '. No job starts a scheduled slot until it is resumed (Cluster view).');
  }
  return {
    name: 'jobs', root,
    async refresh() {
      const q = new URLSearchParams({ limit: st.limit, offset: st.offset });
      if (st.q) q.set('q', st.q);
      const r = await api('GET', '/api/jobs?' + q);
      st.jobs = r.data || [];
      st.total = Number(r.headers.get('X-Total-Count')) || st.jobs.length;
      // The cluster's pause comes with every job; a page that holds none
      // (a search that matches nothing) asks for any one job to learn it.
      let any = st.jobs[0];
      if (!any && st.q) any = ((await api('GET', '/api/jobs?limit=1')).data || [])[0];
      st.clusterPause = any ? any.cluster_pause : undefined;
      paint();
    },
  };
}
