// bootlab dashboard: reads /api/events (server-sent events) and draws every
// lab. No framework, no CDN: the page must work in an offline classroom.
// Every value from the server is set with textContent/setAttribute, never
// parsed as HTML.
'use strict';
(function () {
  const token = new URLSearchParams(location.search).get('token') || '';
  // The trainer's view: with the trainer's token (trainer=...) the page
  // also reads which fault each lab has; the learners' page never asks.
  const trainer = new URLSearchParams(location.search).get('trainer') || '';
  let faults = new Map(); // lab name -> [{name, minutes}], trainer's view only
  const labs = new Map();
  let hosts = []; // the hosts the labs run on, with their load (event "hosts")
  const PHASES = ['bootstrap active', 'handoff', 'bootstrap removed'];
  const SVGNS = 'http://www.w3.org/2000/svg';
  const $ = (id) => document.getElementById(id);
  let updates = 0;

  function api(path) {
    return token ? path + (path.includes('?') ? '&' : '?') + 'token=' + encodeURIComponent(token) : path;
  }
  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }
  function sv(tag, attrs, text) {
    const e = document.createElementNS(SVGNS, tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }
  function clear(e) { while (e.firstChild) e.removeChild(e.firstChild); return e; }
  function pad2(n) { return (n < 10 ? '0' : '') + n; }

  function selected() {
    const m = /lab=([a-z0-9-]+)/.exec(location.hash);
    if (m && labs.has(m[1])) return labs.get(m[1]);
    const all = sorted();
    return all.length ? all[0] : null;
  }

  function sorted() {
    const how = $('sort').value;
    const all = Array.from(labs.values());
    all.sort((a, b) => {
      if (how === 'failures') {
        const fa = a.failures.length > 0, fb = b.failures.length > 0;
        if (fa !== fb) return fa ? -1 : 1;
      }
      if (how !== 'name' && a.stageReached !== b.stageReached) return b.stageReached - a.stageReached;
      return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
    });
    return all;
  }

  function stageText(l) {
    const run = l.stages.find((s) => s.state === 'running');
    if (run) return 'stage ' + pad2(run.number) + ' ' + run.slug + ' running';
    const done = l.stages.find((s) => s.number === l.stageReached);
    return done ? 'stage ' + pad2(done.number) + ' ' + done.slug + ' done' : 'no stage run';
  }

  function gib(b) { return (b / (1 << 30)).toFixed(1); }

  // hostLine is a host group's heading: its name, labs and load.
  function hostLine(uri, name, n) {
    const h = hosts.find((x) => x.uri === uri);
    const parts = [n + (n === 1 ? ' lab' : ' labs')];
    if (h && h.memoryTotalBytes) parts.push('memory ' + gib(h.memoryUsedBytes) + ' of ' + gib(h.memoryTotalBytes) + ' GiB in use');
    if (h && h.cpus) parts.push('CPU ' + Math.round(h.cpuBusyPercent || 0) + '% of ' + h.cpus);
    if (h && h.error) parts.push(h.error);
    const head = el('h3', { class: 'host', 'data-host': name, title: uri.split('?')[0] }, name || uri);
    head.appendChild(el('span', { class: 'meta' }, ' ' + parts.join(' · ')));
    return head;
  }

  function tile(l, sel) {
    const t = el('div', { class: 'tile' + (sel && sel.name === l.name ? ' sel' : ''), 'data-lab': l.name, 'data-failures': String(l.failures.length) });
    t.appendChild(el('h4', {}, l.name));
    t.appendChild(el('div', { class: 'meta' }, [l.profile || '?', l.nodesUp + '/' + l.nodesTotal + ' nodes up', l.orphaned ? 'orphaned' : l.phase].join(' · ')));
    const prog = el('div', { class: 'prog', title: stageText(l) });
    const bar = el('i');
    bar.style.width = Math.round((100 * l.stageReached) / Math.max(1, l.stages.length)) + '%';
    prog.appendChild(bar);
    t.appendChild(prog);
    t.appendChild(el('div', { class: 'meta' }, stageText(l) + (l.verify ? ' · verify ' + (l.verify.ok ? '✓' : '✗') : '')));
    if (l.failures.length) t.appendChild(el('div', { class: 'fail', title: l.failures.join('\n') }, l.failures.length + ': ' + l.failures[0]));
    for (const f of faults.get(l.name) || []) {
      t.appendChild(el('div', { class: 'fault', 'data-fault': f.name }, 'fault set: ' + f.name + ' (' + f.minutes + ' min)'));
    }
    t.addEventListener('click', () => { location.hash = 'lab=' + l.name; });
    return t;
  }

  // renderTiles draws the class: one group of tiles per host (sorted by
  // its name), each headed by the host's load; one host, one group.
  function renderTiles() {
    const box = clear($('tiles'));
    const sel = selected();
    const all = sorted();
    if (!all.length) {
      box.appendChild(el('p', { class: 'empty' }, 'no labs on this host yet'));
      return;
    }
    const groups = new Map();
    for (const l of all) {
      const key = l.uri || '';
      if (!groups.has(key)) groups.set(key, { name: l.host || key, labs: [] });
      groups.get(key).labs.push(l);
    }
    const keys = Array.from(groups.keys()).sort((a, b) => (groups.get(a).name < groups.get(b).name ? -1 : 1));
    for (const k of keys) {
      const g = groups.get(k);
      const sec = el('section', { class: 'hostgroup', 'data-host': g.name });
      sec.appendChild(hostLine(k, g.name, g.labs.length));
      const grid = el('div', { class: 'tiles' });
      for (const l of g.labs) grid.appendChild(tile(l, sel));
      sec.appendChild(grid);
      box.appendChild(sec);
    }
  }

  function nodeRow(nodes, y) {
    const pos = {};
    const span = 920 / Math.max(1, nodes.length);
    const w = Math.min(160, span - 10);
    nodes.forEach((n, i) => {
      const x = 20 + i * span + (span - w) / 2;
      pos[n.name] = { x: x + w / 2, y: y, w: w };
    });
    return pos;
  }

  function renderTopology(l) {
    const svg = clear($('topology'));
    const dnsNames = l.dns.map((r) => r.name).filter((n) => !/^(bootstrap|master|worker)/.test(n));
    svg.appendChild(sv('rect', { class: 'box host', x: 20, y: 8, width: 920, height: 58, rx: 6 }));
    svg.appendChild(sv('text', { x: 32, y: 28, 'font-weight': 'bold' }, 'host'));
    svg.appendChild(sv('text', { x: 80, y: 28 }, 'network ' + (l.network.name || '-') + ' (' + (l.network.exists ? (l.network.active ? 'active' : 'inactive') : 'absent') + ')  bridge ' + (l.network.bridge || '-') + '  gateway ' + (l.network.gateway || '-') + '  ' + (l.cidr || '')));
    const dnsLine = l.dns.filter((r) => dnsNames.includes(r.name)).map((r) => r.name + ' → ' + r.ip).join('   ');
    svg.appendChild(sv('text', { x: 32, y: 52, class: 'small', id: 'dns-names' }, 'DNS  ' + (dnsLine || 'no records')));

    const lb = l.loadBalancer;
    svg.appendChild(sv('rect', { class: 'box lb', x: 150, y: 90, width: 660, height: 100, rx: 6 }));
    svg.appendChild(sv('text', { x: 164, y: 110, 'font-weight': 'bold' }, 'load balancer (haproxy) ' + (lb.address || '')));
    svg.appendChild(sv('text', { x: 796, y: 110, 'text-anchor': 'end', id: 'lb-state', 'data-running': String(lb.running) }, lb.running ? 'running' : 'stopped'));
    if (lb.error) svg.appendChild(sv('text', { x: 164, y: 126, class: 'small' }, lb.error.slice(0, 110)));
    const ports = {};
    lb.frontends.forEach((f, i) => {
      const x = 170 + i * 160;
      ports[f.name] = { x: x + 65, y: 184 };
      const g = sv('g', { 'data-frontend': f.name });
      g.appendChild(sv('rect', { class: 'port', x: x, y: 136, width: 130, height: 48, rx: 4 }));
      g.appendChild(sv('text', { x: x + 65, y: 156, 'text-anchor': 'middle', 'font-weight': 'bold' }, String(f.port)));
      g.appendChild(sv('text', { x: x + 65, y: 174, 'text-anchor': 'middle', class: 'small' }, f.name));
      svg.appendChild(g);
    });

    const control = l.nodes.filter((n) => n.role !== 'worker');
    const workers = l.nodes.filter((n) => n.role === 'worker');
    const pos = Object.assign(nodeRow(control, 300), nodeRow(workers, 420));
    svg.setAttribute('viewBox', '0 0 960 ' + (workers.length ? 510 : 390));
    const links = sv('g', {});
    svg.appendChild(links);
    for (const f of lb.frontends) {
      for (const b of f.backends) {
        const p = ports[f.name], n = pos[b.server];
        if (!p || !n) continue;
        const line = sv('line', { class: 'link', x1: p.x, y1: p.y, x2: n.x, y2: n.y, 'data-backend': f.name + '/' + b.server, 'data-health': b.health });
        line.appendChild(sv('title', {}, f.name + ' → ' + b.server + ' ' + b.address + ': ' + (b.status || b.health) + (b.pending ? ' (expected: ' + b.pending + ')' : '')));
        links.appendChild(line);
      }
    }
    for (const n of l.nodes) {
      const p = pos[n.name];
      if (!p) continue;
      const x = p.x - p.w / 2;
      const g = sv('g', { class: 'node', 'data-node': n.name, 'data-state': n.state, 'data-role': n.role || '' });
      g.appendChild(sv('rect', { class: 'box', x: x, y: p.y, width: p.w, height: 76, rx: 5 }));
      g.appendChild(sv('text', { x: x + 8, y: p.y + 17, 'font-weight': 'bold' }, n.name));
      g.appendChild(sv('text', { x: x + 8, y: p.y + 33 }, (n.role || '?') + ' · ' + n.state));
      g.appendChild(sv('text', { x: x + 8, y: p.y + 49 }, n.ip || 'no address'));
      g.appendChild(sv('text', { x: x + 8, y: p.y + 65, class: 'small' }, n.fqdn || ''));
      svg.appendChild(g);
    }
  }

  function renderTimeline(l) {
    const svg = clear($('timeline'));
    const w = 300;
    PHASES.forEach((ph, i) => {
      const x = 10 + i * (w + 15);
      const g = sv('g', { class: 'phase' + (l.phase === ph ? ' current' : ''), 'data-phase': ph });
      g.appendChild(sv('rect', { x: x, y: 10, width: w, height: 44, rx: 22 }));
      g.appendChild(sv('text', { x: x + w / 2, y: 37, 'text-anchor': 'middle' }, ph));
      svg.appendChild(g);
    });
    svg.setAttribute('data-phase', l.phase);
  }

  function renderStages(l) {
    const ol = clear($('stages'));
    for (const s of l.stages) {
      const li = el('li', { value: String(s.number), 'data-stage': String(s.number), 'data-state': s.state });
      li.appendChild(el('span', { class: 'st ' + s.state }, s.state));
      li.appendChild(document.createTextNode(s.slug));
      if (s.message) li.appendChild(el('span', { class: 'msg' }, s.message));
      ol.appendChild(li);
    }
    $('stage-sum').textContent = stageText(l);
  }

  function renderVerify(l) {
    const box = clear($('verify'));
    const v = l.verify;
    if (!v) {
      box.appendChild(el('p', { class: 'meta' }, 'never verified: bootlab lab verify'));
    } else {
      const when = new Date(v.time).toLocaleString();
      // Pending and skipped checks neither passed nor failed (older records count pending under failed).
      const pending = v.pending || 0, failed = v.total - v.passed - pending - (v.skipped || 0);
      const sum = v.ok ? '✓ ' + v.passed + '/' + v.total + ' passed' : '✗ ' + failed + ' of ' + v.total + ' failed';
      box.appendChild(el('p', { 'data-ok': String(v.ok) }, sum + (pending ? ', ' + pending + ' pending' : '') + ' at ' + when));
      const ul = el('ul', { class: 'failures' });
      for (const f of v.failed.slice(0, 8)) ul.appendChild(el('li', {}, f.group + ' ' + f.name + ': ' + f.detail));
      box.appendChild(ul);
    }
    const fl = clear($('failures'));
    for (const f of l.failures) fl.appendChild(el('li', {}, f));
    if (!l.failures.length) fl.appendChild(el('li', { class: 'meta' }, 'nothing'));
    const tb = clear($('dns').tBodies[0]);
    for (const r of l.dns) {
      const tr = el('tr');
      tr.appendChild(el('td', {}, r.name));
      tr.appendChild(el('td', {}, r.ip));
      tb.appendChild(tr);
    }
  }

  // renderCluster shows who serves the API and the MCS now (haproxy's
  // view) and, when the lab has a kubeconfig, each Node with its static
  // (mirror) pods and the CSRs waiting for approval, from the real API.
  function renderCluster(l) {
    const sv = l.serving || { api: [], mcs: [] };
    const who = (xs) => (xs.length ? xs.join(' ') : 'nobody');
    const p = $('serving');
    p.textContent = 'API served by ' + who(sv.api) + ' · MCS served by ' + who(sv.mcs);
    p.setAttribute('data-api', sv.api.join(' '));
    p.setAttribute('data-mcs', sv.mcs.join(' '));
    const box = clear($('cluster'));
    const csrs = clear($('csrs'));
    const c = l.cluster;
    if (!c) {
      box.appendChild(el('p', { class: 'meta' }, 'no kubeconfig for this lab: bootlab lab kubeconfig'));
      csrs.appendChild(el('li', { class: 'meta' }, '-'));
      return;
    }
    if (c.error) box.appendChild(el('p', { class: 'error', id: 'cluster-error' }, 'API: ' + c.error));
    for (const n of c.nodes) {
      const d = el('div', { 'data-cluster-node': n.name, 'data-ready': String(n.ready) });
      d.appendChild(el('b', {}, n.name + (n.ready ? ' ✓ Ready' : ' ✗ not Ready')));
      const ul = el('ul', { class: 'pods' });
      for (const pod of n.pods) {
        ul.appendChild(el('li', { 'data-pod': pod.namespace + '/' + pod.name, 'data-static': String(pod.static) },
          pod.namespace + '/' + pod.name + ' ' + pod.phase + (pod.static ? ' (static)' : '')));
      }
      d.appendChild(ul);
      box.appendChild(d);
    }
    if (!c.error && !c.nodes.length) box.appendChild(el('p', { class: 'meta' }, 'no Node registered yet'));
    for (const r of c.pendingCSRs) csrs.appendChild(el('li', { 'data-csr': r.name }, r.name + ' from ' + r.requestor + ' (' + r.signer + ')'));
    if (!c.pendingCSRs.length) csrs.appendChild(el('li', { class: 'meta' }, 'none'));
  }

  // renderEtcd lists the etcd members with each one's state (leader,
  // voter, learner) and node, from the masters' console reports.
  function renderEtcd(l) {
    const ul = clear($('etcd'));
    const e = l.etcd;
    $('etcd-sum').textContent = e ? e.members.length + (e.from ? ' · as ' + e.from + ' reads them' : '') : '';
    if (e && e.error) ul.appendChild(el('li', { class: 'error', id: 'etcd-error' }, e.error));
    if (!e || (!e.members.length && !e.error)) {
      ul.appendChild(el('li', { class: 'meta' }, 'no member list reported yet (a rehearsal master reports it from stage 07)'));
      return;
    }
    for (const m of e.members) {
      ul.appendChild(el('li', { 'data-etcd-member': m.name || m.peerURL, 'data-state': m.state, 'data-node': m.node || '' },
        (m.name || '(not started)') + ' ' + m.state + ' on ' + (m.node || '?') + ' · ' + m.peerURL));
    }
  }

  function renderDetail() {
    const l = selected();
    $('detail').hidden = !l;
    if (!l) return;
    $('detail').setAttribute('data-lab', l.name);
    $('lab-title').textContent = l.name;
    $('lab-sub').textContent = [l.profile, l.domain, l.uri, l.nodesUp + '/' + l.nodesTotal + ' nodes up'].filter(Boolean).join(' · ');
    $('lab-error').hidden = !l.error;
    $('lab-error').textContent = l.error || '';
    renderTopology(l);
    renderTimeline(l);
    renderStages(l);
    renderCluster(l);
    renderEtcd(l);
    renderVerify(l);
  }

  function render() {
    $('updates').textContent = String(updates);
    renderTiles();
    renderDetail();
  }

  // noteChange writes what changed in a lab into the page's change log.
  function noteChange(old, l) {
    if (!old) return;
    const seen = [];
    if (old.loadBalancer.running !== l.loadBalancer.running) seen.push('load balancer ' + (l.loadBalancer.running ? 'started' : 'stopped'));
    if (old.phase !== l.phase) seen.push('phase ' + old.phase + ' → ' + l.phase);
    const api = (v) => ((v.serving || {}).api || []).join(' ');
    if (api(old) !== api(l)) seen.push('API served by ' + (api(l) || 'nobody'));
    if (old.stageReached !== l.stageReached) seen.push('stage reached ' + old.stageReached + ' → ' + l.stageReached);
    for (const n of l.nodes) {
      const o = old.nodes.find((x) => x.name === n.name);
      if (o && o.state !== n.state) seen.push(n.name + ' ' + o.state + ' → ' + n.state);
    }
    const health = (v) => v.loadBalancer.frontends.map((f) => f.backends.map((b) => b.health).join()).join();
    if (!seen.length && health(old) !== health(l)) seen.push('backend health changed');
    const ol = $('changes');
    for (const s of seen) {
      ol.insertBefore(el('li', { 'data-lab': l.name }, new Date().toLocaleTimeString() + ' ' + l.name + ': ' + s), ol.firstChild);
    }
    while (ol.children.length > 50) ol.removeChild(ol.lastChild);
  }

  // The event stream: a snapshot on connect, then one event per changed
  // lab. On error the page closes the stream and reconnects with backoff
  // (1 s doubling to 15 s), keeping what it last drew meanwhile.
  let backoff = 1000;
  function setConn(state, text) {
    $('conn').setAttribute('data-state', state);
    $('conn').textContent = text || state;
  }
  function connect() {
    setConn('connecting', 'connecting…');
    const es = new EventSource(api('api/events'));
    es.addEventListener('snapshot', (e) => {
      backoff = 1000;
      setConn('live');
      labs.clear();
      for (const l of JSON.parse(e.data).labs) labs.set(l.name, l);
      render();
    });
    es.addEventListener('lab', (e) => {
      const l = JSON.parse(e.data);
      noteChange(labs.get(l.name), l);
      labs.set(l.name, l);
      updates++;
      render();
    });
    es.addEventListener('hosts', (e) => {
      hosts = JSON.parse(e.data).hosts;
      renderTiles();
    });
    es.addEventListener('removed', (e) => {
      labs.delete(JSON.parse(e.data).name);
      updates++;
      render();
    });
    es.onerror = () => {
      es.close();
      setConn('reconnecting', 'reconnecting in ' + Math.round(backoff / 1000) + ' s');
      setTimeout(connect, backoff);
      backoff = Math.min(backoff * 2, 15000);
    };
  }

  // pollFaults reads the trainer's view every 5 s (the faults change only
  // when a trainer runs lab break or class break).
  function pollFaults() {
    fetch(api('api/trainer/faults'), { headers: { 'X-Bootlab-Trainer': trainer } })
      .then((r) => (r.ok ? r.json() : Promise.reject(new Error('HTTP ' + r.status))))
      .then((doc) => {
        const next = new Map();
        for (const f of doc.faults) {
          if (!next.has(f.lab)) next.set(f.lab, []);
          next.get(f.lab).push(f);
        }
        faults = next;
        $('trainer').setAttribute('data-state', 'ok');
        renderTiles();
      })
      .catch((e) => {
        $('trainer').setAttribute('data-state', 'error');
        $('trainer').textContent = "trainer's view: " + e.message;
      })
      .finally(() => setTimeout(pollFaults, 5000));
  }

  $('sort').addEventListener('change', render);
  window.addEventListener('hashchange', render);
  connect();
  if (trainer) {
    $('trainer').hidden = false;
    pollFaults();
  }
})();
