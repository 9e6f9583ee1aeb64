// The schedules held as data: a list filtered by job, ID prefix and
// health, paged by cursor; and a schedule's page, with its definition, its
// recent slots, and pause, resume and delete.

const SCHEDULE_HEALTHS = ['', 'failing', 'missed', 'running', 'paused', 'ok', 'never'];

function schedulesView() {
  const saved = JSON.parse(sessionStorage.getItem('slotcron.schedules') || '{}');
  const st = { job: saved.job || '', prefix: saved.prefix || '', health: saved.health || '', cursors: [''], rows: [], next: '', scanned: 0 };
  const job = h('input', { id: 's-job', type: 'search', value: st.job, placeholder: 'registered job', autocomplete: 'off' });
  const prefix = h('input', { id: 's-prefix', type: 'search', value: st.prefix, placeholder: 'ID begins with…', autocomplete: 'off' });
  const health = h('select', { id: 's-health' }, SCHEDULE_HEALTHS.map((v) => h('option', { value: v, text: v || 'any' })));
  health.value = st.health;
  let debounce = 0;
  const onFilter = () => {
    clearTimeout(debounce);
    debounce = setTimeout(() => {
      Object.assign(st, { job: job.value.trim(), prefix: prefix.value, health: health.value, cursors: [''] });
      sessionStorage.setItem('slotcron.schedules', JSON.stringify({ job: st.job, prefix: st.prefix, health: st.health }));
      kick();
    }, 250);
  };
  [job, prefix].forEach((e) => e.addEventListener('input', onFilter));
  health.addEventListener('change', onFilter);
  const summary = h('span', { id: 'schedules-summary', class: 'muted' });
  const body = h('tbody', { id: 'schedules-body' });
  const prev = h('button', { type: 'button', id: 's-prev', text: '← Previous', on: { click: () => { st.cursors.pop(); kick(); } } });
  const next = h('button', { type: 'button', id: 's-next', text: 'Next →', on: { click: () => { st.cursors.push(st.next); kick(); } } });
  const heads = ['Status', 'Schedule', 'Job', 'When', 'Newest slot', 'Version'].map((t) => h('th', { scope: 'col', text: t }));
  const root = h('section', { id: 'schedules-view' },
    h('h1', { text: 'Schedules' }),
    h('p', { class: 'muted small', text: 'Schedules held as data: made through the API, the CLI or the Go API, one per tenant.' }),
    h('div', { class: 'toolbar' }, h('label', { for: 's-job', text: 'Job' }), job, h('label', { for: 's-prefix', text: 'ID prefix' }), prefix,
      h('label', { for: 's-health', text: 'Health' }), health, summary),
    h('div', { class: 'table-wrap' }, h('table', { id: 'schedules-table', class: 'stack' }, h('thead', {}, h('tr', {}, heads)), body)),
    h('div', { class: 'pager' }, prev, next));

  function row(x) {
    const last = x.last ? [when(x.last.slot), h('div', { class: 'small muted', text: x.last.state + (x.last.outcome ? ' (' + x.last.outcome + ')' : '') + (x.last.reason ? ': ' + x.last.reason : '') })]
      : h('span', { class: 'muted', text: 'none yet' });
    const cells = [dot(x.health), [h('a', { href: '#/schedules/' + enc(x.id), text: x.id, class: 'schedule-link' })], h('code', { text: x.job }),
      [h('code', { class: 'nowrap', text: x.schedule }), h('div', { class: 'small muted', text: x.timezone })], last, String(x.version)];
    return h('tr', { class: 'h-' + x.health, dataset: { id: x.id } },
      cells.map((c, i) => h('td', { dataset: { label: heads[i].textContent } }, h('div', { class: 'cell' }, c))));
  }
  return {
    name: 'schedules', root,
    async refresh() {
      const q = new URLSearchParams({ limit: 100 });
      for (const k of ['job', 'prefix', 'health']) if (st[k]) q.set(k, st[k]);
      const after = st.cursors[st.cursors.length - 1];
      if (after) q.set('after', after);
      const r = await api('GET', '/api/schedules?' + q);
      st.rows = r.data.schedules;
      st.next = r.data.next;
      st.scanned = r.data.scanned;
      body.replaceChildren(...st.rows.map(row));
      if (!st.rows.length) body.append(h('tr', {}, h('td', { colspan: heads.length, class: 'muted', text: 'No schedule matches.' })));
      summary.textContent = st.rows.length + ' shown' + (st.health ? ' · ' + st.scanned + ' read to find them' : '');
      prev.disabled = st.cursors.length <= 1;
      next.disabled = !st.next;
    },
  };
}

function scheduleView(id) {
  const path = '/api/schedules/' + enc(id);
  const st = { s: null };
  const title = h('h1', {}, h('span', { id: 'schedule-id', text: id }), ' ', h('span', { id: 'schedule-state', class: 'badge' }));
  const def = h('dl', { class: 'kv', id: 'schedule-def' });
  const recent = h('tbody', { id: 'schedule-history' });
  const reason = h('input', { id: 's-pause-reason', type: 'text', maxLength: 1000, placeholder: 'why (required to pause)' });
  const pauseBtn = gate(h('button', { type: 'submit', id: 's-pause', text: 'Pause' }), 'operator');
  const actMsg = h('p', { class: 'msg', id: 's-msg', role: 'status' });
  const pauseForm = h('form', { class: 'action', id: 's-pause-form', noValidate: true }, h('label', {}, 'Reason', reason), pauseBtn);
  pauseForm.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const paused = !!(st.s && st.s.paused);
    if (!paused && !reason.value.trim()) { msg(actMsg, 'Say why: a reason is required.'); reason.focus(); return; }
    pauseBtn.disabled = true;
    try {
      await api('POST', path + (paused ? '/resume' : '/pause'), { reason: reason.value || undefined });
      msg(actMsg, (paused ? 'Resumed ' : 'Paused ') + id + '.', true);
      reason.value = '';
      kick();
    } catch (e) { msg(actMsg, (paused ? 'Resume' : 'Pause') + ' refused: ' + e.message); } finally { paintGate(pauseBtn); }
  });
  const delBtn = gate(h('button', {
    type: 'button', id: 's-delete', class: 'danger', text: 'Delete', on: {
      click: async () => {
        if (!window.confirm('Delete schedule ' + id + '? No slot of it starts once it is deleted.')) return;
        delBtn.disabled = true;
        try {
          await api('DELETE', path);
          msg(actMsg, 'Deleted ' + id + '.', true);
          kick();
        } catch (e) { msg(actMsg, 'Delete refused: ' + e.message); } finally { paintGate(delBtn); }
      },
    },
  }), 'admin');
  const root = h('section', { id: 'schedule-view' },
    h('p', {}, h('a', { href: '#/schedules', text: '← Schedules' })), title,
    h('div', { class: 'cards' },
      h('div', { class: 'card' }, h('h2', { text: 'Definition' }), def),
      h('div', { class: 'card' }, h('h2', { text: 'Actions' }), pauseForm, delBtn, actMsg,
        h('p', { class: 'small muted' }, 'Status, audit and backfill: ', h('a', { id: 's-job-page', href: '#/jobs/' + enc(id), text: 'the job page' }),
          ' (on a replica that runs the schedule).'))),
    h('h2', { text: 'Recent slots' }),
    h('div', { class: 'table-wrap' }, h('table', { class: 'stack' },
      h('thead', {}, h('tr', {}, ['Slot', 'State', 'Attempt', 'Fence', 'Holder', 'Error or reason'].map((t) => h('th', { scope: 'col', text: t })))), recent)));
  const kv = (k, v) => [h('dt', { text: k }), h('dd', {}, v)];
  function paint(s) {
    document.title = id + ' · slotcron';
    const state = $('#schedule-state');
    state.textContent = s ? (s.paused ? 'paused' : 'v' + s.version) : 'deleted or never made';
    if (!s) { def.replaceChildren(h('dd', { class: 'muted', text: 'No such schedule.' })); pauseForm.hidden = delBtn.hidden = true; return; }
    pauseForm.hidden = delBtn.hidden = false;
    pauseBtn.textContent = s.paused ? 'Resume' : 'Pause';
    def.replaceChildren(...[
      kv('Job', h('code', { text: s.job })), kv('Schedule', h('code', { text: s.schedule })), kv('Time zone', s.timezone),
      kv('Params', s.params ? h('code', { class: 'params', text: JSON.stringify(s.params) }) : h('span', { class: 'muted', text: 'none' })),
      kv('Active', (s.start ? 'from ' + utc(s.start) : 'from its creation') + (s.end ? ' until ' + utc(s.end) : '')),
      kv('Policies', 'lease ' + s.lease + ' · timeout ' + s.timeout + ' · starting deadline ' + s.starting_deadline + ' · overlap ' + s.overlap +
        ' · catch_up ' + s.catch_up + ' · on_crash ' + s.on_crash + (s.retries && s.retries.max ? ' · retries ' + s.retries.max : '')),
      kv('Written', [when(s.updated_at), ' by ' + (s.updated_by || '?') + ' · version ' + s.version]),
    ].flat());
  }
  return {
    name: 'schedule', root,
    async refresh() {
      let s = null;
      try { s = (await api('GET', path)).data; } catch (e) { if (e.status !== 404) throw e; }
      st.s = s;
      paint(s);
      const hist = (await api('GET', '/api/history?' + new URLSearchParams({ job: id, limit: 20 }))).data || [];
      recent.replaceChildren(...hist.map((m) => h('tr', {}, [utc(m.slot), m.state + (m.outcome ? ' (' + m.outcome + ')' : '') + (m.manual ? ' (manual)' : ''),
        String(m.attempt), String(m.fence), m.holder, m.error || m.reason || ''].map((t) => h('td', { text: t })))));
      if (!hist.length) recent.append(h('tr', {}, h('td', { colspan: 6, class: 'muted', text: 'No slot recorded yet.' })));
    },
  };
}
