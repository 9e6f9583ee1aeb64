// Routing between the views, and the refresh that keeps the current one.

let view = null, timer = 0, busy = false, again = false;
function kick() {
  clearTimeout(timer);
  if (busy) { again = true; return; }
  if (document.hidden) { timer = setTimeout(kick, REFRESH_MS); return; }
  busy = true;
  view.refresh().then(() => report(null), (e) => report(e)).finally(() => {
    busy = false;
    if (again) { again = false; kick(); } else timer = setTimeout(kick, REFRESH_MS);
  });
}
function route() {
  const hash = location.hash || '#/';
  const decode = (re) => { const m = re.exec(hash); try { return m ? decodeURIComponent(m[1]) : null; } catch (e) { return null; } };
  const name = decode(/^#\/jobs\/(.+)$/), sched = decode(/^#\/schedules\/(.+)$/);
  const acts = /^#\/actions(?:\?(.*))?$/.exec(hash);
  view = name !== null ? jobView(name) : sched !== null ? scheduleView(sched) : hash === '#/cluster' ? clusterView()
    : hash === '#/schedules' ? schedulesView() : acts ? actionsView(acts[1]) : jobsView();
  $('#main').replaceChildren(view.root);
  const schedules = view.name === 'schedules' || view.name === 'schedule';
  for (const [id, on] of [['#nav-jobs', view.name === 'jobs' || view.name === 'job'], ['#nav-schedules', schedules], ['#nav-cluster', view.name === 'cluster'],
    ['#nav-actions', view.name === 'actions']]) {
    if (on) $(id).setAttribute('aria-current', 'page'); else $(id).removeAttribute('aria-current');
  }
  if (view.name !== 'job' && view.name !== 'schedule') document.title = 'slotcron';
  window.scrollTo(0, 0);
  kick();
}
window.addEventListener('hashchange', route);
document.addEventListener('visibilitychange', () => { if (!document.hidden) kick(); });
api('GET', '/api/cluster').then((r) => paintHeader(r.data), () => {});
whoami();
route();
