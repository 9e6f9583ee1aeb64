// A job's view: its settings, spec in force and status, actions, timeline,
// history and audit.

function jobView(name) {
  const path = '/api/jobs/' + enc(name);
  const st = { job: null, cursors: [''], filters: { state: '', outcome: '', attempt_gt: '', manual: '' }, page: null, plan: null };
  const badge = h('span', { id: 'job-health', class: 'badge' });
  const endedBadge = h('span', { id: 'job-ended', class: 'badge', text: 'ended', title: 'the job has no slot left', hidden: true });
  const title = h('h1', {}, h('span', { class: 'dot', 'aria-hidden': 'true' }), h('span', { id: 'job-name', text: name }), badge, ' ', endedBadge);
  const settings = h('dl', { class: 'kv', id: 'job-settings' });
  const status = h('dl', { class: 'kv', id: 'job-status' });
  const specDl = h('dl', { class: 'kv', id: 'job-spec' });
  const conflict = h('div', { id: 'spec-conflict', class: 'banner conflict', role: 'alert', hidden: true });
  const audit = auditPart(path);

  // Trigger.
  const triggerMsg = h('p', { class: 'msg', id: 'trigger-msg', role: 'status' });
  const triggerBtn = gate(h('button', {
    type: 'button', id: 'trigger', class: 'primary', text: 'Trigger now', on: {
      click: async () => {
        triggerBtn.disabled = true;
        try {
          const r = await api('POST', path + '/trigger');
          msg(triggerMsg, 'Started ' + r.data.key + ' with fence ' + r.data.fence + '.', true);
          kick();
        } catch (e) { msg(triggerMsg, 'Trigger refused: ' + e.message); } finally { paintGate(triggerBtn); }
      },
    },
  }), 'operator');

  // Pause and resume.
  const reason = h('input', { id: 'pause-reason', type: 'text', required: true, maxLength: 1000, placeholder: 'why (required)' });
  const by = h('input', { id: 'pause-by', type: 'text', maxLength: 1000, placeholder: 'your name (optional)' });
  const pauseBtn = gate(h('button', { type: 'submit', id: 'pause-submit', text: 'Pause job' }), 'operator');
  const pauseMsg = h('p', { class: 'msg', id: 'pause-msg', role: 'status' });
  const pauseTitle = h('h3', { class: 'small', id: 'pause-title', text: 'Pause' });
  const pauseForm = h('form', { class: 'action', id: 'pause-form', noValidate: true },
    h('label', {}, 'Reason', reason), h('label', {}, 'By', by), pauseBtn);
  pauseForm.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const paused = !!(st.job && st.job.pause);
    if (!reason.value.trim()) { msg(pauseMsg, 'Say why: a reason is required.'); reason.focus(); return; }
    pauseBtn.disabled = true;
    try {
      await api('POST', paused ? '/api/resume' : '/api/pause', { job: name, reason: reason.value, by: by.value || undefined });
      msg(pauseMsg, (paused ? 'Resumed' : 'Paused') + ' ' + name + '.', true);
      reason.value = '';
      kick();
    } catch (e) { msg(pauseMsg, (paused ? 'Resume' : 'Pause') + ' refused: ' + e.message); } finally { paintGate(pauseBtn); }
  });

  // Backfill, previewed first.
  const hourAgo = new Date(now() - 3600e3).toISOString().replace(/\.\d+Z$/, 'Z');
  const from = h('input', { id: 'bf-from', type: 'text', value: hourAgo, size: 22, spellcheck: false });
  const to = h('input', { id: 'bf-to', type: 'text', value: new Date(now()).toISOString().replace(/\.\d+Z$/, 'Z'), size: 22, spellcheck: false });
  const bfMsg = h('p', { class: 'msg', id: 'bf-msg', role: 'status' });
  const bfPlan = h('div', { id: 'bf-plan' });
  const previewBtn = gate(h('button', { type: 'submit', id: 'bf-preview', text: 'Preview (dry run)' }), 'operator');
  const startBtn = h('button', { type: 'button', id: 'bf-start', class: 'danger', text: 'Run the backfill', disabled: true });
  const bfForm = h('form', { class: 'action', id: 'bf-form' },
    h('label', {}, 'From (RFC 3339)', from), h('label', {}, 'To (RFC 3339)', to), previewBtn, startBtn);
  const planFor = () => from.value.trim() + ' ' + to.value.trim();
  [from, to].forEach((i) => i.addEventListener('input', () => { startBtn.disabled = st.plan !== planFor(); }));
  bfForm.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    previewBtn.disabled = true;
    try {
      const r = await api('POST', path + '/backfill', { from: from.value.trim(), to: to.value.trim(), dry_run: true });
      st.plan = r.data.to_run > 0 ? planFor() : null;
      startBtn.disabled = st.plan === null;
      startBtn.textContent = 'Run ' + r.data.to_run + ' slot' + (r.data.to_run === 1 ? '' : 's');
      msg(bfMsg, 'Plan: ' + r.data.to_run + ' of ' + r.data.slots.length + ' slots never ran and would run; the rest are left alone.' +
        (r.data.to_requested ? ' It ends at ' + utc(r.data.to) + ': later slots may still start on schedule.' : ''), true);
      bfPlan.replaceChildren(planTable(r.data.slots));
    } catch (e) {
      st.plan = null;
      startBtn.disabled = true;
      bfPlan.replaceChildren();
      msg(bfMsg, 'Backfill refused: ' + e.message);
    } finally { paintGate(previewBtn); }
  });
  startBtn.addEventListener('click', async () => {
    startBtn.disabled = true;
    try {
      const r = await api('POST', path + '/backfill', { from: from.value.trim(), to: to.value.trim(), dry_run: false });
      msg(bfMsg, r.data.started ? 'Started: ' + r.data.to_run + ' slots run one after another on this replica; see the history.' : 'Nothing to run.', true);
      st.plan = null;
      kick();
    } catch (e) { msg(bfMsg, 'Backfill refused: ' + e.message); }
  });
  function planTable(slots) {
    return h('div', { class: 'table-wrap' }, h('table', { class: 'stack', id: 'bf-table' },
      h('thead', {}, h('tr', {}, ['Slot', 'Action', 'Marker'].map((t) => h('th', { scope: 'col', text: t })))),
      h('tbody', {}, slots.map((x) => h('tr', {},
        h('td', { dataset: { label: 'Slot' }, text: utc(x.slot) }),
        h('td', { dataset: { label: 'Action' }, class: x.action === 'run' ? 'good' : 'muted', text: x.action }),
        h('td', { dataset: { label: 'Marker' }, text: (x.state || 'none') + (x.reason ? ': ' + x.reason : '') }))))));
  }

  // History, its filters and its paging.
  const fState = h('select', { id: 'f-state' }, ['', 'running', 'done', 'retrying', 'released', 'abandoned', 'skipped', 'replaced'].map((v) => h('option', { value: v, text: v || 'any' })));
  const fOutcome = h('select', { id: 'f-outcome' }, ['', 'succeeded', 'failed', 'timeout'].map((v) => h('option', { value: v, text: v || 'any' })));
  const fRetried = h('input', { id: 'f-retried', type: 'checkbox' });
  const fManual = h('select', { id: 'f-manual' }, [['', 'any'], ['true', 'manual only'], ['false', 'scheduled only']].map(([v, t]) => h('option', { value: v, text: t })));
  const filters = h('form', { class: 'action', id: 'history-filters' },
    h('label', {}, 'State', fState), h('label', {}, 'Outcome', fOutcome),
    h('label', {}, 'Manual', fManual), h('label', { class: 'check' }, h('span', { text: 'Attempt > 1' }), fRetried));
  const onFilter = () => {
    st.filters = { state: fState.value, outcome: fOutcome.value, attempt_gt: fRetried.checked ? '1' : '', manual: fManual.value };
    st.cursors = [''];
    kick();
  };
  [fState, fOutcome, fRetried, fManual].forEach((e) => e.addEventListener('change', onFilter));
  filters.addEventListener('submit', (ev) => ev.preventDefault());
  const histBody = h('tbody', { id: 'history-body' });
  const newer = h('button', { type: 'button', text: '← Newer', on: { click: () => { st.cursors.pop(); kick(); } } });
  const older = h('button', { type: 'button', text: 'Older →', on: { click: () => { st.cursors.push(st.page.next_before); kick(); } } });
  const histNote = h('span', { class: 'muted', id: 'history-note' });
  const timeline = h('div', { id: 'timeline' });
  const events = h('ul', { class: 'events', id: 'timeline-events' });
  const HCOLS = ['Slot', 'State', 'Start', 'Finish', 'Duration', 'Holder', 'Fence', 'Attempt', 'Reason or error'];

  const root = h('section', { id: 'job-view' },
    h('p', {}, h('a', { href: '#/', text: '← All jobs' })),
    title,
    conflict,
    h('div', { class: 'cards' },
      h('div', { class: 'card' }, h('h2', { text: 'Settings' }), settings),
      h('div', { class: 'card', id: 'spec-card' }, h('h2', { text: 'Spec in force' }), specDl),
      h('div', { class: 'card' }, h('h2', { text: 'Status' }), status),
      h('div', { class: 'card', id: 'actions' }, h('h2', { text: 'Actions' }),
        triggerBtn, triggerMsg,
        pauseTitle, pauseForm, pauseMsg,
        h('h3', { class: 'small', text: 'Backfill slots that never ran' }), bfForm, bfMsg, bfPlan,
        h('p', { class: 'small' }, h('a', { id: 'job-actions-link', href: '#/actions?target=' + enc(name), text: 'Who did what to this job' })))),
    h('h2', { text: 'Timeline' }),
    h('p', { class: 'small muted', text: 'The slots of the history page below, oldest left. A ring marks an attempt after the first (a retry or a takeover); a tick marks a holder that differs from the slot before.' }),
    timeline, events,
    h('h2', { text: 'History' }), filters,
    h('div', { class: 'table-wrap' }, h('table', { class: 'stack', id: 'history-table' },
      h('thead', {}, h('tr', {}, HCOLS.map((t) => h('th', { scope: 'col', text: t })))), histBody)),
    h('div', { class: 'pager' }, newer, histNote, older),
    audit.root);

  function paintJob(j) {
    st.job = j;
    title.className = 'h-' + j.health;
    badge.textContent = j.health;
    document.title = j.name + ' · slotcron';
    const kv = (k, ...v) => [h('dt', { text: k }), h('dd', {}, v)];
    paintSpec(specDl, j.catalog);
    paintConflict(conflict, j.catalog);
    settings.replaceChildren(...[
      kv('Schedule', h('code', { text: j.schedule })),
      kv('Time zone', j.timezone),
      kv('Overlap', overlapText(j.overlap)), kv('Lease', j.lease), kv('Timeout', j.timeout),
      kv('On crash', j.on_crash + (j.max_attempts ? ', at most ' + j.max_attempts + ' attempts' : '')),
      kv('Retries', j.retries.max ? j.retries.max + ', backoff ' + j.retries.backoff + ' up to ' + j.retries.max_backoff : 'none'),
      kv('Starting deadline', j.starting_deadline),
      kv('Catch up', j.catch_up + (j.catch_up === 'all' ? ' (at most ' + j.catch_up_limit + ')' : '')),
      kv('Jitter', j.jitter), kv('History kept', j.history),
      ...boundsRows(j, kv),
      kv('Next slot', j.next ? [nextSlot(j), j.next_skip ? h('div', {}, h('span', { id: 'next-skip', class: 'badge warn', text: 'skipped: ' + j.next_skip })) : '']
        : h('span', { class: 'muted', text: j.ended ? 'none: the job ended' : j.paused ? 'none while paused' : 'none' })),
    ].flat());
    endedBadge.hidden = !j.ended;
    status.replaceChildren(...[
      kv('Health', dot(j.health)),
      kv('Last success', j.last_success ? [when(j.last_success.finished_at), ' · ', utc(j.last_success.slot), ' · ', dur(j.last_success.duration_seconds)] : h('span', { class: 'muted', text: 'none in the last ' + j.scanned + ' slots' })),
      kv('Last failure', j.last_failure ? [when(j.last_failure.finished_at || j.last_failure.slot), ' · ', utc(j.last_failure.slot), h('pre', { class: 'errtext', id: 'last-error', text: failureText(j.last_failure) })] : h('span', { class: 'muted', text: 'none in the last ' + j.scanned + ' slots' })),
      kv('Failures in a row', h('span', { class: j.consecutive_failures ? 'bad' : '', text: j.consecutive_failures + (j.consecutive_failures_more ? '+' : '') })),
      kv('Running now', j.running.length ? j.running.map(runningText) : h('span', { class: 'muted', text: 'nothing' })),
      kv('Paused', j.paused ? [pauseText(j.pause, 'job'), pauseText(j.cluster_pause, 'cluster')] : h('span', { class: 'muted', text: 'no' })),
      kv('Recent', spark(j.recent)),
    ].flat());
    const paused = !!j.pause;
    pauseBtn.textContent = paused ? 'Resume job' : 'Pause job';
    pauseTitle.textContent = paused ? 'Resume (paused on its own)' : 'Pause' + (j.cluster_pause ? ' (the cluster is paused too)' : '');
  }
  // The settings that say which slots are the job's: DST rule, calendars,
  // active window, max_runs and end, each only when the job has it.
  function boundsRows(j, kv) {
    const rows = [];
    if (j.dst) rows.push(kv('DST', h('span', { id: 'job-dst', text: 'gap ' + j.dst.gap + ', repeat ' + j.dst.repeat })));
    if (j.except) {
      rows.push(kv('Skips', h('span', { id: 'job-except', text: j.except.map((c) => 'calendar ' + c.name + ' (' + c.dates + (c.dates === 1 ? ' date)' : ' dates)')).join(', ') })));
    }
    if (j.active_from || j.active_until) {
      rows.push(kv('Active', h('span', { id: 'job-active', text: [j.active_from && 'from ' + utc(j.active_from), j.active_until && 'until ' + utc(j.active_until)].filter(Boolean).join(' ') })));
    }
    if (j.max_runs) rows.push(kv('Max runs', h('span', { id: 'job-max-runs', text: j.max_runs + ', counted from ' + utc(j.active_from) })));
    if (j.end) rows.push(kv('End', h('span', { id: 'job-end' }, h('span', { class: 'mono', text: utc(j.end) }), j.ended ? [' ', h('span', { class: 'badge', text: 'ended' })] : '')));
    return rows;
  }
  function paintHistory(p) {
    st.page = p;
    histBody.replaceChildren(...p.slots.map((x) => h('tr', { class: outcomeClass(x), dataset: { slot: x.slot } },
      h('td', { dataset: { label: 'Slot' } }, h('span', { class: 'mono', text: utc(x.slot) }), x.manual ? [' ', h('span', { class: 'badge', text: 'manual' })] : '',
        x.backfill ? [' ', h('span', { class: 'badge', text: 'backfill' })] : ''),
      h('td', { dataset: { label: 'State' } }, h('span', { class: outcomeClass(x).replace('s-', 'st-'), text: outcomeText(x) })),
      h('td', { dataset: { label: 'Start' }, text: x.attempt ? near(x.claimed_at, x.slot) : '', title: utc(x.claimed_at) }),
      h('td', { dataset: { label: 'Finish' }, text: near(x.finished_at, x.slot), title: utc(x.finished_at) }),
      h('td', { dataset: { label: 'Duration' }, class: 'num', text: x.state === 'running' ? dur((now() - Date.parse(x.claimed_at)) / 1000) + '…' : dur(x.duration_seconds) }),
      h('td', { dataset: { label: 'Holder' }, text: x.holder }),
      h('td', { dataset: { label: 'Fence' }, class: 'num', text: x.fence || '' }),
      h('td', { dataset: { label: 'Attempt' }, class: 'num' + (x.attempt > 1 ? ' warn' : ''), text: x.attempt || '' }),
      h('td', { dataset: { label: 'Reason or error' } }, x.error ? h('div', { class: 'errtext', text: x.error, title: x.error }) : '', x.reason ? h('div', { class: 'reason small', text: x.reason }) : ''))));
    if (!p.slots.length) histBody.append(h('tr', {}, h('td', { colspan: HCOLS.length, class: 'muted', text: 'No slot matches.' })));
    newer.disabled = st.cursors.length <= 1;
    older.disabled = !p.next_before;
    histNote.textContent = 'page ' + st.cursors.length + ' · ' + p.slots.length + ' slots' +
      (p.scan_stopped ? ' · the scan stopped after ' + p.scanned + ' slots: older ones may match too (Older →)' : '');
    paintTimeline(p.slots.slice().reverse());
  }
  function paintTimeline(slots) {
    const step = 22, hgt = 70, y = 42;
    const width = Math.max(300, slots.length * step + 20);
    const svg = s('svg', { class: 'timeline', width, height: hgt, viewBox: '0 0 ' + width + ' ' + hgt, preserveAspectRatio: 'xMinYMid meet', role: 'img', 'aria-label': 'timeline of ' + slots.length + ' slots' });
    svg.append(s('line', { x1: 0, y1: y, x2: width, y2: y, class: 'axis' }));
    const evs = [];
    let prevHolder = '';
    slots.forEach((x, i) => {
      const cx = 14 + i * step;
      const label = utc(x.slot) + ' · ' + outcomeText(x) + (x.holder ? ' · ' + x.holder : '') + (x.attempt ? ' · attempt ' + x.attempt : '') + (x.fence ? ' · fence ' + x.fence : '');
      svg.append(s('circle', { cx, cy: y, r: 6, class: outcomeClass(x) }, label));
      if (x.attempt > 1) {
        svg.append(s('circle', { cx, cy: y, r: 9.5, class: 'ring' }, 'attempt ' + x.attempt + ': a retry or a takeover'));
        evs.push([x, 'attempt ' + x.attempt + ' on ' + x.holder + ' (a retry or a takeover)']);
      }
      if (x.holder && x.attempt && prevHolder && x.holder !== prevHolder) {
        svg.append(s('line', { x1: cx - step / 2, y1: 8, x2: cx - step / 2, y2: 28, class: 'handover' }, 'holder ' + prevHolder + ' → ' + x.holder));
        evs.push([x, 'holder changed: ' + prevHolder + ' → ' + x.holder]);
      }
      if (x.holder && x.attempt) prevHolder = x.holder;
    });
    timeline.replaceChildren(svg);
    events.replaceChildren(...evs.reverse().map(([x, t]) => h('li', {}, h('span', { class: 'mono', text: utc(x.slot) }), ' — ', t)));
    if (!evs.length) events.append(h('li', { class: 'muted', text: 'No retries, takeovers or holder changes among these slots.' }));
  }
  return {
    name: 'job', root,
    async refresh() {
      const q = new URLSearchParams();
      const before = st.cursors[st.cursors.length - 1];
      if (before) q.set('before', before);
      for (const [k, v] of Object.entries(st.filters)) if (v) q.set(k, v);
      const [j, p] = await Promise.all([api('GET', path), api('GET', path + '/history?' + q), audit.refresh()]);
      paintJob(j.data);
      paintHistory(p.data);
    },
  };
}
