/* The explore page (growth_gevent/api/explore.py): series of the public API drawn as an SVG line chart and a
   table. Its state is the URL (?country=&indicator=&compare=COUNTRY/INDICATOR&from=&to=), so that back,
   forward, reload and a shared link all show the same thing. It reads only, from this server only. */
"use strict";
(function () {
  const API = "/api/v1/growth";
  const MAX_SERIES = 5;
  const SVG = "http://www.w3.org/2000/svg";
  const BOX = { width: 800, height: 360, left: 78, right: 16, top: 14, bottom: 48 };
  const $ = (id) => document.getElementById(id);
  const names = { countries: null, indicators: null }; // the unfiltered facets: name -> item
  const facets = new Map(); // facet URL -> its items, read once a page
  let shown = null; // what the chart shows: {years, series}
  let cursorAt = -1; // the index in shown.years of the year under the cursor
  let latest = 0; // the number of the last show(): an earlier one answered later draws nothing
  class Refused extends Error {} // the API's 400: its message is for the user, as it is

  async function getJSON(url) {
    const response = await fetch(url, { headers: { Accept: "application/json" } });
    if (response.status === 404) return null;
    const body = await response.json();
    if (response.status === 400) throw new Refused(body.msg);
    if (!response.ok) throw new Error(`${url}: ${response.status} ${body.msg || ""}`);
    return { body, etag: response.headers.get("ETag") };
  }

  function readState(search) {
    const query = new URLSearchParams(search);
    const series = [];
    if (query.get("country") || query.get("indicator")) {
      series.push({ country: query.get("country") || "", indicator: query.get("indicator") || "" });
    }
    for (const pair of query.getAll("compare")) { // a name holds no "/": the first one splits the pair
      const slash = pair.indexOf("/");
      if (slash > 0) series.push({ country: pair.slice(0, slash), indicator: pair.slice(slash + 1) });
    }
    return { series: series.slice(0, MAX_SERIES), from: query.get("from") || "", to: query.get("to") || "" };
  }

  function stateQuery(state) {
    const query = new URLSearchParams();
    const [first, ...others] = state.series;
    if (first) { query.set("country", first.country); query.set("indicator", first.indicator); }
    for (const each of others) query.append("compare", `${each.country}/${each.indicator}`);
    if (state.from) query.set("from", state.from);
    if (state.to) query.set("to", state.to);
    return "?" + query.toString();
  }

  function yearsQuery(state, extra) {
    const query = new URLSearchParams(extra);
    if (state.from) query.set("from", state.from);
    if (state.to) query.set("to", state.to);
    return query.toString();
  }

  // The form: one row a series, each input with a datalist of the names the other input leaves.
  let rowsMade = 0;
  function addRow(series) {
    const row = $("row").content.firstElementChild.cloneNode(true);
    rowsMade += 1;
    for (const [field, kind] of [["country", "countries"], ["indicator", "indicators"]]) {
      const input = row.querySelector(`input[name=${field}]`);
      const list = row.querySelector(`datalist.${kind}`);
      list.id = `${kind}-${rowsMade}`;
      input.setAttribute("list", list.id);
      input.value = series ? series[field] : "";
      input.addEventListener("focus", () => suggest(row, kind));
      input.addEventListener("input", () => suggest(row, kind === "countries" ? "indicators" : "countries"));
    }
    row.querySelector(".remove").addEventListener("click", () => {
      row.remove();
      if (!$("rows").children.length) addRow();
      numberRows();
      $("rows").querySelector("input").focus();
    });
    $("rows").append(row);
    numberRows();
    return row;
  }

  function numberRows() {
    const rows = [...$("rows").children];
    rows.forEach((row, index) => {
      for (const input of row.querySelectorAll("input")) {
        input.setAttribute("aria-label", `${input.name === "country" ? "Country" : "Indicator"} of series ${index + 1}`);
      }
      row.querySelector(".remove").setAttribute("aria-label", `Remove series ${index + 1}`);
      row.querySelector(".remove").hidden = rows.length === 1;
    });
    $("add").disabled = rows.length >= MAX_SERIES;
  }

  async function suggest(row, kind) {
    const other = kind === "countries" ? "indicator" : "country";
    const otherKind = kind === "countries" ? "indicators" : "countries";
    const by = row.querySelector(`input[name=${other}]`).value.trim().toUpperCase();
    // Filtered by the other name once it is one that exists; else every name.
    const filter = names[otherKind] && names[otherKind].has(by) ? `?${other}=${encodeURIComponent(by)}` : "";
    const url = `${API}/${kind}${filter}`;
    const list = row.querySelector(`datalist.${kind}`);
    if (list.dataset.url === url) return;
    list.dataset.url = url;
    const items = await facetItems(url);
    if (list.dataset.url !== url) return; // a later choice won the race
    const field = kind === "countries" ? "Country" : "Indicator";
    list.replaceChildren(...items.map((item) => {
      const option = document.createElement("option");
      option.value = item[field];
      option.label = `${plural(item.records, "record")}, ${item.from}–${item.to}`;
      return option;
    }));
  }

  async function facetItems(url) {
    if (!facets.has(url)) facets.set(url, getJSON(url).then((answer) => (answer ? answer.body.items : [])));
    return facets.get(url);
  }

  const count = (n) => n.toLocaleString("en");
  const plural = (n, one, many = `${one}s`) => `${count(n)} ${n === 1 ? one : many}`;

  function formState() {
    const series = [...$("rows").children].map((row) => ({
      country: row.querySelector("input[name=country]").value.trim().toUpperCase(),
      indicator: row.querySelector("input[name=indicator]").value.trim().toUpperCase(),
    })).filter((each) => each.country || each.indicator);
    return { series, from: $("from").value.trim(), to: $("to").value.trim() };
  }

  function fillForm(state) {
    $("rows").replaceChildren();
    for (const series of state.series) addRow(series);
    if (!state.series.length) addRow();
    $("from").value = state.from;
    $("to").value = state.to;
  }

  // The store as a whole, from the facets: its size, names and years; and how recently bulk loads changed it.
  async function describeStore() {
    const [countries, indicators, status] = await Promise.all([
      facetItems(`${API}/countries`), facetItems(`${API}/indicators`), getJSON(`${API}/post/status`)]);
    names.countries = new Map(countries.map((item) => [item.Country, item]));
    names.indicators = new Map(indicators.map((item) => [item.Indicator, item]));
    const records = countries.reduce((sum, item) => sum + item.records, 0); // the size, without asking again
    if (records === 0) {
      $("dataset").textContent = "0 records.";
      $("load-command").textContent = "curl -s -X POST -H 'Content-Type: application/json' " +
        `--data-binary @data/sample.json ${location.origin}${API}`;
      $("empty").hidden = false;
      return;
    }
    const first = countries.reduce((lowest, item) => Math.min(lowest, item.from), Infinity);
    const last = countries.reduce((highest, item) => Math.max(highest, item.to), -Infinity);
    const bulk = status.body;
    const parts = [plural(records, "record"), plural(countries.length, "country", "countries"),
      plural(indicators.length, "indicator"), `years ${first}–${last}`,
      `bulk loads: ${bulk["jobs applied"]} of ${bulk["jobs accepted"]} applied (${bulk.msg})`];
    if (bulk["last snapshot"]) parts.push(`last snapshot ${new Date(bulk["last snapshot"] * 1000).toLocaleString()}`);
    parts.push(`read at ${new Date().toLocaleTimeString()}`);
    $("dataset").textContent = parts.join(" · ") + ".";
  }

  async function show(state) {
    const ticket = ++latest; // an earlier choice still being read must not draw over this one
    const wanted = state.series.filter((each) => each.country && each.indicator);
    if (!wanted.length) {
      $("result").hidden = true;
      $("message").textContent = state.series.length ? "Name both a country and an indicator." : "";
      return;
    }
    $("message").textContent = "Reading…";
    const answers = await Promise.all(wanted.map((each) => getJSON(
      `${API}/${encodeURIComponent(each.country)}/${encodeURIComponent(each.indicator)}?${yearsQuery(state)}`)));
    if (ticket !== latest) return; // back and forward faster than the answers: the last choice wins
    const series = [];
    const missing = [];
    wanted.forEach((each, index) => {
      const answer = answers[index];
      if (answer) series.push({ ...each, values: new Map(answer.body.Values.map((v) => [v.Year, v.Value])), etag: answer.etag });
      else missing.push(`${each.country} / ${each.indicator}`);
    });
    const range = state.from || state.to ? ` in years ${state.from || "…"}–${state.to || "…"}` : "";
    $("message").textContent = missing.length ? `No records for ${missing.join(", ")}${range}.` : "";
    $("result").hidden = !series.length;
    if (!series.length) return;
    const years = [...new Set(series.flatMap((each) => [...each.values.keys()]))].sort((a, b) => a - b);
    shown = { years, series };
    cursorAt = -1;
    drawChart();
    fillTable(state);
    document.title = `${series.map((each) => `${each.country} ${each.indicator}`).join(", ")} · Explore · growth-gevent`;
    document.body.dataset.drawn = stateQuery(state); // for the tests: the chart of this state is drawn
  }

  // The chart: an SVG of the series, one line each, broken where a year between two others has no value.
  function element(name, attributes, parent, text) {
    const made = document.createElementNS(SVG, name);
    for (const [key, value] of Object.entries(attributes)) made.setAttribute(key, value);
    if (text !== undefined) made.textContent = text;
    if (parent) parent.append(made);
    return made;
  }

  function niceStep(span, wanted) {
    const rough = span / wanted;
    const power = 10 ** Math.floor(Math.log10(rough));
    return power * ([1, 2, 5, 10].find((factor) => factor * power >= rough) || 10);
  }

  // Counted, not added up, and at most MAX_TICKS: a step below a value's precision (1e17 and 1e17 + 16) or a
  // span past the largest double (-1e308 to 1e308) gives fewer ticks, never a loop without end.
  const MAX_TICKS = 24;
  function ticks(low, high, wanted, integers) {
    const span = high / 2 - low / 2; // halves: no overflow
    const step = integers ? Math.max(1, Math.round(niceStep(span || 1, wanted / 2))) : niceStep(span, wanted / 2);
    if (!Number.isFinite(step) || step <= 0) return [];
    const found = [];
    for (let index = Math.ceil(low / step); index * step <= high + step * 1e-9 && found.length < MAX_TICKS; index++) {
      found.push(Number((index * step).toPrecision(12)));
    }
    return found;
  }

  const compact = new Intl.NumberFormat("en", { notation: "compact", maximumSignificantDigits: 4 });
  const tickLabel = (value) => (Math.abs(value) >= 1e6 ? compact.format(value) : String(value));

  function drawChart() {
    const { years, series } = shown;
    const svg = $("chart");
    svg.replaceChildren();
    const values = series.flatMap((each) => [...each.values.values()]);
    let [low, high] = [Math.min(...values), Math.max(...values)];
    // A margin of a twentieth above and below, so that no point sits on an edge; a flat line gets one too.
    const margin = low === high ? Math.abs(low) / 10 : (high / 2 - low / 2) / 10;
    [low, high] = [Math.max(low - margin, -Number.MAX_VALUE), Math.min(high + margin, Number.MAX_VALUE)];
    if (!(high > low)) [low, high] = [low - 1, high + 1]; // zero, or a value too small for a margin
    const yTicks = ticks(low, high, 6, false);
    if (yTicks.length) [low, high] = [Math.min(low, yTicks[0]), Math.max(high, yTicks[yTicks.length - 1])];
    const [first, last] = [years[0], years[years.length - 1]];
    const [xLow, xHigh] = first === last ? [first - 1, last + 1] : [first, last];
    const plotWidth = BOX.width - BOX.left - BOX.right;
    const plotHeight = BOX.height - BOX.top - BOX.bottom;
    const x = (year) => BOX.left + ((year - xLow) / (xHigh - xLow)) * plotWidth;
    const y = (value) => BOX.top + (1 - (value / 2 - low / 2) / (high / 2 - low / 2)) * plotHeight;
    shown.x = x;

    for (const tick of yTicks) {
      element("line", { class: "grid", x1: BOX.left, x2: BOX.width - BOX.right, y1: y(tick), y2: y(tick) }, svg);
      element("text", { x: BOX.left - 6, y: y(tick) + 4, "text-anchor": "end" }, svg, tickLabel(tick));
    }
    for (const tick of ticks(xLow, xHigh, 10, true)) {
      element("line", { class: "axis", x1: x(tick), x2: x(tick), y1: BOX.height - BOX.bottom, y2: BOX.height - BOX.bottom + 5 }, svg);
      element("text", { x: x(tick), y: BOX.height - BOX.bottom + 19, "text-anchor": "middle" }, svg, String(tick));
    }
    element("line", { class: "axis", x1: BOX.left, x2: BOX.width - BOX.right, y1: BOX.height - BOX.bottom, y2: BOX.height - BOX.bottom }, svg);
    element("line", { class: "axis", x1: BOX.left, x2: BOX.left, y1: BOX.top, y2: BOX.height - BOX.bottom }, svg);
    element("text", { class: "x-label", x: BOX.left + plotWidth / 2, y: BOX.height - 6, "text-anchor": "middle" }, svg, "Year");
    const indicators = [...new Set(series.map((each) => each.indicator))].join(", ");
    element("text", { class: "y-label", transform: `translate(16 ${BOX.top + plotHeight / 2}) rotate(-90)`, "text-anchor": "middle" }, svg, indicators);

    // One year is the step of the data unless every series skips more (five-yearly figures are not gaps).
    let step = Infinity;
    for (const each of series) {
      const own = [...each.values.keys()];
      for (let i = 1; i < own.length; i++) step = Math.min(step, own[i] - own[i - 1]);
    }
    series.forEach((each, index) => {
      const own = [...each.values.entries()];
      let path = "";
      own.forEach(([year, value], i) => {
        const joined = i > 0 && year - own[i - 1][0] <= step;
        path += `${joined ? "L" : "M"}${x(year).toFixed(2)} ${y(value).toFixed(2)}`;
      });
      element("path", { class: `line s${index}`, d: path }, svg);
      for (const [year, value] of own) {
        const point = element("circle", { class: `point s${index}`, cx: x(year), cy: y(value), r: 3.5,
          "data-series": index, "data-year": year, "data-value": value }, svg);
        element("title", {}, point, `${each.country} ${each.indicator} ${year}: ${value}`);
      }
    });
    element("line", { class: "cursor", id: "cursor", x1: 0, x2: 0, y1: BOX.top, y2: BOX.height - BOX.bottom, visibility: "hidden" }, svg);
    element("rect", { class: "overlay", x: BOX.left, y: BOX.top, width: plotWidth, height: plotHeight }, svg);
    svg.setAttribute("aria-label", `Line chart of ${series.map((each) => `${each.country} ${each.indicator}`).join(", ")}` +
      ` by year, ${first} to ${last}`);

    $("legend").replaceChildren(...series.map((each, index) => {
      const item = document.createElement("li");
      const swatch = document.createElement("span");
      swatch.className = `swatch s${index}`;
      item.append(swatch, `${each.country} · ${each.indicator}`);
      return item;
    }));
    moveCursor(-1);
  }

  // The cursor: the year nearest the pointer, or moved with the keys; the tooltip gives each exact value.
  function moveCursor(index) {
    cursorAt = index;
    const tooltip = $("tooltip");
    const line = $("cursor");
    for (const point of document.querySelectorAll("#chart .point.on")) point.classList.remove("on");
    if (index < 0) { tooltip.hidden = true; line.setAttribute("visibility", "hidden"); return; }
    const year = shown.years[index];
    const at = shown.x(year);
    line.setAttribute("x1", at);
    line.setAttribute("x2", at);
    line.setAttribute("visibility", "visible");
    for (const point of document.querySelectorAll(`#chart .point[data-year="${year}"]`)) point.classList.add("on");
    const heading = document.createElement("strong");
    heading.textContent = String(year);
    const lines = shown.series.map((each, i) => {
      const row = document.createElement("div");
      const swatch = document.createElement("span");
      swatch.className = `swatch s${i}`;
      const value = each.values.get(year);
      row.append(swatch, `${each.country} ${each.indicator}: ${value === undefined ? "no value" : value}`);
      return row;
    });
    tooltip.replaceChildren(heading, ...lines);
    tooltip.hidden = false;
    const chart = $("chart").getBoundingClientRect();
    const scale = chart.width / BOX.width;
    const left = at * scale + 12;
    tooltip.style.left = `${Math.min(left, chart.width - tooltip.offsetWidth - 4)}px`;
    tooltip.style.top = `${BOX.top * scale}px`;
  }

  function nearestYear(clientX) {
    const chart = $("chart").getBoundingClientRect();
    const at = ((clientX - chart.left) / chart.width) * BOX.width;
    let best = 0;
    shown.years.forEach((year, index) => {
      if (Math.abs(shown.x(year) - at) < Math.abs(shown.x(shown.years[best]) - at)) best = index;
    });
    return best;
  }

  function onKey(event) {
    if (!shown) return;
    const lastIndex = shown.years.length - 1;
    const moves = { ArrowRight: Math.min(cursorAt + 1, lastIndex), ArrowLeft: Math.max(cursorAt - 1, 0), Home: 0,
      End: lastIndex, Escape: -1 };
    if (!(event.key in moves)) return;
    event.preventDefault();
    moveCursor(moves[event.key]);
  }

  function fillTable(state) {
    const { years, series } = shown;
    const head = document.createElement("tr");
    for (const label of ["Year", ...series.map((each) => `${each.country} · ${each.indicator}`)]) {
      const cell = document.createElement("th");
      cell.scope = "col";
      cell.textContent = label;
      head.append(cell);
    }
    $("table").tHead.replaceChildren(head);
    $("table").tBodies[0].replaceChildren(...years.map((year) => {
      const row = document.createElement("tr");
      const yearCell = document.createElement("th");
      yearCell.scope = "row";
      yearCell.textContent = String(year);
      row.append(yearCell);
      for (const each of series) {
        const cell = document.createElement("td");
        const value = each.values.get(year);
        cell.textContent = value === undefined ? "—" : String(value);
        if (value === undefined) cell.setAttribute("aria-label", "no value");
        row.append(cell);
      }
      return row;
    }));
    $("table").caption.textContent = `${years.length} years, ${years[0]}–${years[years.length - 1]}`;
    // Downloads: the export's own URLs for what is shown, so that what is seen is what is got.
    $("downloads").replaceChildren(...series.map((each) => {
      const item = document.createElement("li");
      item.append(`${each.country} · ${each.indicator}: `);
      for (const format of ["csv", "json"]) {
        const link = document.createElement("a");
        link.href = `${API}/export?${yearsQuery(state, { country: each.country, indicator: each.indicator, format })}`;
        link.download = `${each.country}_${each.indicator}.${format}`;
        link.textContent = `Download ${format.toUpperCase()}`;
        link.setAttribute("aria-label", `Download ${each.country} ${each.indicator} as ${format.toUpperCase()}`);
        item.append(link, " ");
      }
      const etag = document.createElement("span");
      etag.className = "etag";
      etag.textContent = `ETag ${each.etag}`;
      item.append(etag);
      return item;
    }));
  }

  function start() {
    const state = readState(location.search);
    fillForm(state);
    $("add").addEventListener("click", () => addRow().querySelector("input").focus());
    $("choice").addEventListener("submit", (event) => {
      event.preventDefault();
      const chosen = formState();
      // The inputs say the names as the URL does, upper-case.
      for (const input of $("rows").querySelectorAll("input")) input.value = input.value.trim().toUpperCase();
      const query = stateQuery(chosen);
      if (query !== location.search && !(query === "?" && !location.search)) history.pushState(null, "", `/explore${query}`);
      run(show(chosen));
    });
    window.addEventListener("popstate", () => {
      const restored = readState(location.search);
      fillForm(restored);
      run(show(restored));
    });
    const svg = $("chart");
    svg.addEventListener("pointermove", (event) => shown && moveCursor(nearestYear(event.clientX)));
    svg.addEventListener("pointerleave", () => moveCursor(-1));
    svg.addEventListener("keydown", onKey);
    svg.addEventListener("focus", () => shown && cursorAt < 0 && moveCursor(0));
    svg.addEventListener("blur", () => moveCursor(-1));
    run(describeStore());
    run(show(state));
  }

  function run(promise) {
    promise.catch((error) => {
      if (error instanceof Refused) $("result").hidden = true;
      $("message").textContent = error instanceof Refused ? error.message
        : `The API did not answer as expected: ${error.message}`;
    });
  }

  start();
})();
