// The actions log: who paused, resumed, triggered, backfilled or wrote a
// schedule, when, with which role and why, newest first; filtered by who,
// kind and target, the filters in the URL (#/actions?kind=pause), paged
// by the API's next.

const ACTION_KINDS = ['', 'pause', 'resume', 'trigger', 'backfill', 'schedule-put', 'schedule-create', 'schedule-delete',
  'schedule-pause', 'schedule-resume', 'config'];
const ACTION_FILTERS = ['who', 'kind', 'target'];

// actionTarget is a's target as a link to its page: a schedule's, a
// job's, or the cluster's for an action on every job.
function actionTarget(a) {
  if (a.kind === 'config') return a.target ? h('code', { text: a.target }) : h('span', { class: 'muted', text: '—' });
  if (!a.target) return h('a', { href: '#/cluster', text: 'the cluster', class: 'muted' });
  if (a.kind.startsWith('schedule-')) return h('a', { href: '#/schedules/' + enc(a.target), text: a.target, class: 'schedule-link' });
  return h('a', { href: '#/jobs/' + enc(a.target), text: a.target, class: 'job-link' });
}
// atTime is a time in the browser's zone, with UTC on hover and how long
// ago below.
function atTime(iso) {
  const t = new Date(Date.parse(iso));
  if (isNaN(t)) return iso;
  return [h('span', { class: 'nowrap', title: utc(iso), text: t.toLocaleString() }), h('div', { class: 'small muted' }, when(iso))];
}

function actionsView(query) {
  const q = new URLSearchParams(query || '');
  const st = { who: q.get('who') || '', kind: q.get('kind') || '', target: q.get('target') || '', befores: [''], next: 0 };
  const who = h('input', { id: 'a-who', type: 'search', value: st.who, placeholder: 'token name', autocomplete: 'off' });
  const target = h('input', { id: 'a-target', type: 'search', value: st.target, placeholder: 'job or schedule', autocomplete: 'off' });
  const kind = h('select', { id: 'a-kind' }, ACTION_KINDS.map((v) => h('option', { value: v, text: v || 'any' })));
  if (st.kind && !ACTION_KINDS.includes(st.kind)) kind.append(h('option', { value: st.kind, text: st.kind }));
  kind.value = st.kind;
  let debounce = 0;
  const onFilter = () => {
    clearTimeout(debounce);
    debounce = setTimeout(() => {
      Object.assign(st, { who: who.value.trim(), kind: kind.value, target: target.value.trim(), befores: [''] });
      const p = new URLSearchParams();
      for (const k of ACTION_FILTERS) if (st[k]) p.set(k, st[k]);
      // replaceState changes the URL without a hashchange: the view stays.
      history.replaceState(null, '', '#/actions' + (p.toString() ? '?' + p : ''));
      kick();
    }, 250);
  };
  [who, target].forEach((e) => e.addEventListener('input', onFilter));
  kind.addEventListener('change', onFilter);
  const summary = h('span', { id: 'actions-summary', class: 'muted' });
  const body = h('tbody', { id: 'actions-body' });
  const newer = h('button', { type: 'button', id: 'a-newer', text: '← Newer', on: { click: () => { st.befores.pop(); kick(); } } });
  const older = h('button', { type: 'button', id: 'a-older', text: 'Older →', on: { click: () => { st.befores.push(String(st.next)); kick(); } } });
  const heads = ['Time', 'Who', 'Role', 'Via', 'Kind', 'Target', 'Reason', 'Result', 'Detail'].map((t) => h('th', { scope: 'col', text: t }));
  const root = h('section', { id: 'actions-view' },
    h('h1', { text: 'Actions' }),
    h('p', { class: 'muted small', text: 'What was done to the jobs, the schedules and the cluster, by whom, with which role and why; newest first.' }),
    h('div', { class: 'toolbar' }, h('label', { for: 'a-who', text: 'Who' }), who, h('label', { for: 'a-kind', text: 'Kind' }), kind,
      h('label', { for: 'a-target', text: 'Target' }), target, summary),
    h('div', { class: 'table-wrap' }, h('table', { id: 'actions-table', class: 'stack' }, h('thead', {}, h('tr', {}, heads)), body)),
    h('div', { class: 'pager' }, newer, older));

  function row(a) {
    const ok = a.result === 'ok';
    const cells = [atTime(a.at), h('b', { text: a.who }), a.role || h('span', { class: 'muted', text: '—' }), a.via, h('code', { text: a.kind }),
      actionTarget(a), a.reason ? h('span', { class: 'reason', text: a.reason }) : '',
      h('span', { class: ok ? 'good' : 'bad result-bad', text: ok ? a.result : '✗ ' + a.result }), a.detail ? h('span', { class: 'small', text: a.detail }) : ''];
    return h('tr', { class: ok ? 'a-ok' : 'a-failed', dataset: { seq: String(a.seq), kind: a.kind } },
      cells.map((c, i) => h('td', { dataset: { label: heads[i].textContent } }, h('div', { class: 'cell' }, c))));
  }
  return {
    name: 'actions', root,
    async refresh() {
      const p = new URLSearchParams({ limit: 100 });
      for (const k of ACTION_FILTERS) if (st[k]) p.set(k, st[k]);
      const before = st.befores[st.befores.length - 1];
      if (before) p.set('before', before);
      const r = await api('GET', '/api/actions?' + p);
      const rows = r.data.actions || [];
      st.next = r.data.next || 0;
      body.replaceChildren(...rows.map(row));
      const filtered = ACTION_FILTERS.some((k) => st[k]);
      if (!rows.length) {
        body.append(h('tr', {}, h('td', { colspan: heads.length, class: 'muted', id: 'actions-empty',
          text: filtered ? 'No recorded action matches.' : before ? 'No older action.' : 'Nothing recorded yet: no one has paused, resumed, triggered, backfilled or written a schedule here.' })));
      }
      summary.textContent = rows.length + ' shown' + (st.befores.length > 1 ? ' · older page ' + (st.befores.length - 1) : '');
      newer.disabled = st.befores.length <= 1;
      older.disabled = !st.next;
    },
  };
}
