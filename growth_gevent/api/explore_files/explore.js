/* The explore page (growth_gevent/api/explore.py): series of the public API drawn as an SVG line chart and a
   table, labelled by the names and units the facets give. Its state is the URL
   (?country=&indicator=&compare=COUNTRY/INDICATOR&from=&to=&show=index|change&scale=log), so that back,
   forward, reload and a shared link all show the same thing. It reads only, from this server only. */
"use strict";
(function () {
  const API = "/api/v1/growth";
  const MAX_SERIES = 5;
  const SVG = "http://www.w3.org/2000/svg";
  const WIDEST = 800; // the chart's width in user units at most: narrower, one unit is one CSS pixel
  const BOX = { width: WIDEST, height: 360, left: 78, right: 16, top: 14, bottom: 48 };
  const LISTED = 200; // rows of each list shown when nothing is chosen
  const $ = (id) => document.getElementById(id);
  const names = { countries: null, indicators: null }; // the unfiltered facets: code -> item (its name, units)
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
    return { series: series.slice(0, MAX_SERIES), from: query.get("from") || "", to: query.get("to") || "",
      show: ["index", "change"].includes(query.get("show")) ? query.get("show") : "",
      log: query.get("scale") === "log" };
  }

  function stateQuery(state) {
    const query = new URLSearchParams();
    const [first, ...others] = state.series;
    if (first) { query.set("country", first.country); query.set("indicator", first.indicator); }
    for (const each of others) query.append("compare", `${each.country}/${each.indicator}`);
    if (state.from) query.set("from", state.from);
    if (state.to) query.set("to", state.to);
    if (state.show) query.set("show", state.show);
    if (state.log) query.set("scale", "log");
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
      option.label = (item.name ? `${describedAs(item)} — ` : "") + `${plural(item.records, "record")}, ${item.from}–${item.to}`;
      return option;
    }));
  }

  async function facetItems(url) {
    if (!facets.has(url)) facets.set(url, getJSON(url).then((answer) => (answer ? answer.body.items : [])));
    return facets.get(url);
  }

  const count = (n) => n.toLocaleString("en");
  const plural = (n, one, many = `${one}s`) => `${count(n)} ${n === 1 ? one : many}`;

  // A facet item's name, with its units where it has them: "Gross domestic product, constant prices (Percent change)".
  const describedAs = (item) => item.name + (item.units ? ` (${[item.units, item.scale].filter(Boolean).join(", ")})` : "");

  // A code as typed, or the code of the name typed: "Brazil" is BRA, and so is "braz" if no other name has it.
  function codeOf(kind, typed) {
    const text = typed.trim();
    const known = names[kind];
    if (!text || !known || known.has(text.toUpperCase())) return text.toUpperCase();
    const wanted = text.toLowerCase();
    const items = [...known.values()].filter((item) => item.name);
    const exact = items.filter((item) => [item.name, describedAs(item)].some((name) => name.toLowerCase() === wanted));
    const partly = exact.length ? exact : items.filter((item) => describedAs(item).toLowerCase().includes(wanted));
    return partly.length === 1 ? partly[0][kind === "countries" ? "Country" : "Indicator"] : text.toUpperCase();
  }

  function formState() {
    const series = [...$("rows").children].map((row) => ({
      country: codeOf("countries", row.querySelector("input[name=country]").value),
      indicator: codeOf("indicators", row.querySelector("input[name=indicator]").value),
    })).filter((each) => each.country || each.indicator);
    return { series, from: $("from").value.trim(), to: $("to").value.trim(), show: $("show").value,
      log: $("log").checked };
  }

  function fillForm(state) {
    $("rows").replaceChildren();
    for (const series of state.series) addRow(series);
    if (!state.series.length) addRow();
    $("from").value = state.from;
    $("to").value = state.to;
    $("show").value = state.show;
    $("log").checked = state.log;
  }

  // What a series is called: its country's and indicator's names where the facets give them, else their codes.
  function named(each) {
    const country = names.countries && names.countries.get(each.country);
    const indicator = names.indicators && names.indicators.get(each.indicator);
    return { country: (country && country.name) || each.country, indicator: (indicator && indicator.name) || each.indicator,
      units: indicator ? [indicator.units, indicator.scale].filter(Boolean).join(", ") : "" };
  }
  const label = (each, between = " ") => `${each.named.country}${between}${each.named.indicator}`;
  const fileName = (series, extension) => series.map((each) => `${each.country}_${each.indicator}`).join("-")
    .replace(/[^A-Za-z0-9._-]/g, "_") + `.${extension}`;

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
      $("message").textContent = "";
      await listChoices(state.series[0] || { country: "", indicator: "" }, ticket);
      return;
    }
    $("start").hidden = true;
    await described;
    $("message").textContent = "Reading…";
    const answers = await Promise.all(wanted.map((each) => getJSON(
      `${API}/${encodeURIComponent(each.country)}/${encodeURIComponent(each.indicator)}?${yearsQuery(state)}`)));
    if (ticket !== latest) return; // back and forward faster than the answers: the last choice wins
    const series = [];
    const missing = [];
    wanted.forEach((each, index) => {
      const answer = answers[index];
      if (answer) {
        series.push({ ...each, named: named(each), etag: answer.etag,
          values: new Map(answer.body.Values.map((v) => [v.Year, v.Value])) });
      }
      else missing.push(`${each.country} / ${each.indicator}`);
    });
    const range = state.from || state.to ? ` in years ${state.from || "…"}–${state.to || "…"}` : "";
    $("message").textContent = missing.length ? `No records for ${missing.join(", ")}${range}.` : "";
    $("result").hidden = !series.length;
    if (!series.length) return;
    const years = [...new Set(series.flatMap((each) => [...each.values.keys()]))].sort((a, b) => a - b);
    shown = { years, series, state };
    cursorAt = -1;
    drawChart();
    fillTable(state);
    document.title = `${series.map((each) => label(each)).join(", ")} · Explore · growth-gevent`;
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

  // What is drawn of each series: its values, indexed to a base year or as the change from the year before when
  // the state says, or when more than two units would need more than two axes; and the groups that share an axis.
  function plotted(series, state) {
    const unitOf = (each) => each.named.units || each.indicator; // unknown units: each indicator its own
    const groups = [...new Set(series.map(unitOf))];
    const show = state.show || (groups.length > 2 ? "index" : "");
    let note = !state.show && show ? "Three units or more: shown indexed, first common year = 100. " : "";
    let base = null;
    if (show === "index") { // the first year every series has, else each its own first
      base = [...series[0].values.keys()].find((year) => series.every((each) => each.values.has(year))) ?? null;
    }
    const lines = series.map((each) => {
      const own = [...each.values.entries()];
      let points = own;
      if (show === "index") {
        const at = base !== null && each.values.get(base) ? base : own.find(([, value]) => value)?.[0];
        const start = each.values.get(at);
        points = start ? own.map(([year, value]) => [year, (value / start) * 100]) : [];
      } else if (show === "change") {
        points = [];
        for (let i = 1; i < own.length; i++) {
          if (own[i][0] - own[i - 1][0] === 1 && own[i - 1][1]) points.push([own[i][0], (own[i][1] / own[i - 1][1] - 1) * 100]);
        }
      }
      const axis = show ? 0 : groups.indexOf(unitOf(each));
      return { each, points, axis };
    });
    let dropped = 0;
    if (state.log) {
      for (const line of lines) {
        const kept = line.points.filter(([, value]) => value > 0);
        dropped += line.points.length - kept.length;
        line.points = kept;
      }
      if (dropped) note += `${plural(dropped, "value")} at or below 0 not drawn on the log scale. `;
    }
    const unit = show === "index" ? `Index, ${base ?? "first year"} = 100` : show === "change" ? "% change on the year before"
      : null;
    // An axis says its units; an indicator without units is named (the World Bank's hold them in the name).
    const axisLabels = unit ? [unit] : groups.map((group) => {
      const each = series.find((one) => unitOf(one) === group);
      return each.named.units || each.named.indicator;
    });
    return { lines, axisLabels, note, show };
  }

  function scaleOf(values, log, top, bottom) {
    let [low, high] = [Math.min(...values), Math.max(...values)];
    if (!values.length) [low, high] = [log ? 1 : 0, log ? 10 : 1];
    if (log) {
      const [lowPower, highPower] = [Math.floor(Math.log10(low)), Math.ceil(Math.log10(high))];
      const [a, b] = [lowPower, highPower === lowPower ? lowPower + 1 : highPower];
      const at = (value) => top + (1 - (Math.log10(value) - a) / (b - a)) * (bottom - top);
      const step = Math.max(1, Math.ceil((b - a) / 8));
      const marks = [];
      for (let power = a; power <= b; power += step) marks.push(Number((10 ** power).toPrecision(12)));
      return { at, marks };
    }
    // A margin of a twentieth above and below, so that no point sits on an edge; a flat line gets one too.
    const margin = low === high ? Math.abs(low) / 10 : (high / 2 - low / 2) / 10;
    [low, high] = [Math.max(low - margin, -Number.MAX_VALUE), Math.min(high + margin, Number.MAX_VALUE)];
    if (!(high > low)) [low, high] = [low - 1, high + 1]; // zero, or a value too small for a margin
    const marks = ticks(low, high, 6, false);
    if (marks.length) [low, high] = [Math.min(low, marks[0]), Math.max(high, marks[marks.length - 1])];
    return { at: (value) => top + (1 - (value / 2 - low / 2) / (high / 2 - low / 2)) * (bottom - top), marks };
  }

  function drawChart() {
    const { years, series, state } = shown;
    const svg = $("chart");
    svg.replaceChildren();
    const { lines, axisLabels, note } = plotted(series, state);
    $("note").textContent = note;
    // One user unit a CSS pixel below WIDEST, so that the text keeps its size on a phone.
    BOX.width = Math.min(WIDEST, Math.round(svg.parentElement.clientWidth) || WIDEST);
    BOX.height = BOX.width >= 600 ? 360 : Math.round(Math.max(260, BOX.width * 0.8));
    BOX.left = BOX.width >= 600 ? 78 : 58;
    BOX.right = axisLabels.length > 1 ? BOX.left : 16;
    svg.setAttribute("viewBox", `0 0 ${BOX.width} ${BOX.height}`);
    const [first, last] = [years[0], years[years.length - 1]];
    const [xLow, xHigh] = first === last ? [first - 1, last + 1] : [first, last];
    const plotWidth = BOX.width - BOX.left - BOX.right;
    const plotHeight = BOX.height - BOX.top - BOX.bottom;
    const x = (year) => BOX.left + ((year - xLow) / (xHigh - xLow)) * plotWidth;
    const scales = axisLabels.map((_, axis) => scaleOf(
      lines.filter((line) => line.axis === axis).flatMap((line) => line.points.map(([, value]) => value)),
      state.log, BOX.top, BOX.height - BOX.bottom));
    shown.x = x;

    scales.forEach((scale, axis) => {
      const edge = axis ? BOX.width - BOX.right : BOX.left;
      for (const tick of scale.marks) {
        if (!axis) element("line", { class: "grid", x1: BOX.left, x2: BOX.width - BOX.right, y1: scale.at(tick), y2: scale.at(tick) }, svg);
        element("text", { x: edge + (axis ? 6 : -6), y: scale.at(tick) + 4, "text-anchor": axis ? "start" : "end" }, svg, tickLabel(tick));
      }
      element("line", { class: "axis", x1: edge, x2: edge, y1: BOX.top, y2: BOX.height - BOX.bottom }, svg);
      const labelX = axis ? BOX.width - 16 : 14;
      element("text", { class: `y-label${axis ? " right" : ""}`, transform: `translate(${labelX} ${BOX.top + plotHeight / 2}) rotate(${axis ? 90 : -90})`,
        "text-anchor": "middle" }, svg, axisLabels[axis] + (axisLabels.length > 1 ? (axis ? " →" : " ←") : ""));
    });
    for (const tick of ticks(xLow, xHigh, BOX.width >= 600 ? 10 : 5, true)) {
      element("line", { class: "axis", x1: x(tick), x2: x(tick), y1: BOX.height - BOX.bottom, y2: BOX.height - BOX.bottom + 5 }, svg);
      element("text", { x: x(tick), y: BOX.height - BOX.bottom + 19, "text-anchor": "middle" }, svg, String(tick));
    }
    element("line", { class: "axis", x1: BOX.left, x2: BOX.width - BOX.right, y1: BOX.height - BOX.bottom, y2: BOX.height - BOX.bottom }, svg);
    element("text", { class: "x-label", x: BOX.left + plotWidth / 2, y: BOX.height - 6, "text-anchor": "middle" }, svg, "Year");

    // One year is the step of the data unless every series skips more (five-yearly figures are not gaps).
    let step = Infinity;
    for (const each of series) {
      const own = [...each.values.keys()];
      for (let i = 1; i < own.length; i++) step = Math.min(step, own[i] - own[i - 1]);
    }
    lines.forEach(({ each, points, axis }, index) => {
      const y = scales[axis].at;
      let path = "";
      points.forEach(([year, value], i) => {
        const joined = i > 0 && year - points[i - 1][0] <= step;
        path += `${joined ? "L" : "M"}${x(year).toFixed(2)} ${y(value).toFixed(2)}`;
      });
      element("path", { class: `line s${index}`, d: path }, svg);
      for (const [year, value] of points) {
        const point = element("circle", { class: `point s${index}`, cx: x(year), cy: y(value), r: 3.5,
          "data-series": index, "data-year": year, "data-value": each.values.get(year) }, svg);
        element("title", {}, point, `${label(each)} ${year}: ${each.values.get(year)}`);
      }
    });
    element("line", { class: "cursor", id: "cursor", x1: 0, x2: 0, y1: BOX.top, y2: BOX.height - BOX.bottom, visibility: "hidden" }, svg);
    element("rect", { class: "overlay", x: BOX.left, y: BOX.top, width: plotWidth, height: plotHeight }, svg);
    svg.setAttribute("aria-label", `Line chart of ${series.map((each) => label(each)).join(", ")} by year, ${first} to ${last}`);

    $("legend").replaceChildren(...lines.map(({ each, axis }, index) => {
      const item = document.createElement("li");
      const swatch = document.createElement("span");
      swatch.className = `swatch s${index}`;
      const units = each.named.units ? ` (${each.named.units})` : "";
      item.append(swatch, `${label(each, " · ")}${units}${axisLabels.length > 1 ? (axis ? ", right axis" : ", left axis") : ""}`);
      item.title = `${each.country} ${each.indicator}`;
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
      row.append(swatch, `${label(each)}: ${value === undefined ? "no value" : value}`);
      return row;
    });
    tooltip.replaceChildren(heading, ...lines);
    tooltip.hidden = false;
    // Beside the cursor's line, where that year's points are: on its right, else on its left, else (a phone)
    // under the legend and its note, whose units tell apart series of one name. Never over the line, so never
    // over the points it describes.
    const chart = $("chart").getBoundingClientRect();
    const scale = chart.width / BOX.width;
    const [cursorX, width, gap] = [at * scale, tooltip.offsetWidth, 12];
    let [left, top] = [cursorX + gap, BOX.top * scale];
    if (left + width > chart.width) left = cursorX - gap - width;
    if (left < 0) {
      left = Math.max(0, Math.min(cursorX - width / 2, chart.width - width));
      top = Math.max(...["legend", "note"].map((id) => $(id).getBoundingClientRect().bottom)) - chart.top + 4;
    }
    tooltip.style.left = `${left}px`;
    tooltip.style.top = `${top}px`;
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
    for (const text of ["Year", ...series.map((each) => label(each, " · ") + (each.named.units ? ` (${each.named.units})` : ""))]) {
      const cell = document.createElement("th");
      cell.scope = "col";
      cell.textContent = text;
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
    // Downloads: the compared series in one CSV and the chart, made here; each series' export, by its own URL.
    const all = document.createElement("li");
    const together = [["csv", "the compared series as CSV", () => csvOf(series)], ["svg", "the chart as SVG", svgOf],
      ["png", "the chart as PNG", null]].map(([extension, text, make]) => {
      const link = document.createElement("a");
      link.download = fileName(series, extension);
      link.textContent = `Download ${text}`;
      link.href = make ? make() : "#";
      if (!make) link.addEventListener("click", pngDownload, { once: false });
      return link;
    });
    all.append(...together.flatMap((link) => [link, " "]));
    $("downloads").replaceChildren(all, ...series.map((each) => {
      const item = document.createElement("li");
      item.append(`${label(each, " · ")}: `);
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

  // The compared series as the export writes CSV (load reads it back), and the chart as a file of its own.
  const cell = (text) => (/^[\s'"]*[-=+@\t\r]/.test(text) ? `'${text}` : text).replace(/^(.*[",\r\n].*)$/s,
    (quoted) => `"${quoted.replace(/"/g, '""')}"`);
  function csvOf(series) {
    const rows = series.flatMap((each) => [...each.values.entries()].map(([year, value]) =>
      [cell(each.country), cell(each.indicator), value, year].join(",")));
    return "data:text/csv;charset=utf-8," + encodeURIComponent(["Country,Indicator,Value,Year", ...rows].join("\r\n") + "\r\n");
  }

  function svgOf() {
    const copy = $("chart").cloneNode(true);
    copy.setAttribute("xmlns", SVG);
    copy.setAttribute("width", BOX.width);
    copy.setAttribute("height", BOX.height);
    const style = document.createElementNS(SVG, "style");
    const colours = getComputedStyle(document.documentElement);
    style.textContent = [...document.styleSheets[0].cssRules].map((rule) => rule.cssText)
      .filter((text) => /^(#chart|\.s[0-4])/.test(text)).join("\n").replace(/#chart /g, "")
      .replace(/var\((--[a-z0-9]+)\)/g, (_, name) => colours.getPropertyValue(name).trim()) +
      "\ntext { font: 13px system-ui, sans-serif; } .overlay, .cursor { display: none; }";
    copy.prepend(style);
    return "data:image/svg+xml;charset=utf-8," + encodeURIComponent(new XMLSerializer().serializeToString(copy));
  }

  function pngDownload(event) { // drawn from the SVG on a canvas, twice the size, once asked for
    const link = event.currentTarget;
    if (link.href.startsWith("data:")) return;
    event.preventDefault();
    const image = new Image();
    image.onload = () => {
      const canvas = document.createElement("canvas");
      [canvas.width, canvas.height] = [BOX.width * 2, BOX.height * 2];
      const context = canvas.getContext("2d");
      context.fillStyle = "#fff";
      context.fillRect(0, 0, canvas.width, canvas.height);
      context.drawImage(image, 0, 0, canvas.width, canvas.height);
      link.href = canvas.toDataURL("image/png");
      link.click();
    };
    image.src = svgOf();
  }

  // With nothing chosen, what there is: the countries and indicators with their names, records and years, each a
  // link that chooses it; with one of them chosen, the other's that go with it.
  async function listChoices(partial, ticket) {
    await described;
    const lists = partial.country ? ["indicators"] : partial.indicator ? ["countries"] : ["countries", "indicators"];
    const made = await Promise.all(lists.map((kind) => {
      const filter = partial.country ? `?country=${encodeURIComponent(partial.country)}`
        : partial.indicator ? `?indicator=${encodeURIComponent(partial.indicator)}` : "";
      return facetItems(`${API}/${kind}${filter}`).then((items) => listOf(kind, items, partial));
    }));
    if (ticket !== latest) return;
    $("choices").replaceChildren(...made);
    $("start").hidden = !made.some((list) => list.dataset.items !== "0");
    document.body.dataset.drawn = stateQuery({ series: partial.country || partial.indicator ? [partial] : [],
      from: "", to: "" });
  }

  function listOf(kind, items, partial) {
    const field = kind === "countries" ? "Country" : "Indicator";
    const section = document.createElement("section");
    section.dataset.items = items.length;
    const heading = document.createElement("h2");
    const other = partial.country || partial.indicator;
    const otherName = other && named({ country: partial.country, indicator: partial.indicator });
    heading.textContent = `${kind === "countries" ? "Countries" : "Indicators"}` +
      (other ? ` with records of ${partial.country ? otherName.country : otherName.indicator}` : "") +
      ` (${count(items.length)})`;
    const table = document.createElement("table");
    table.className = "choices";
    const head = table.createTHead().insertRow();
    for (const text of ["Name", "Code", ...(kind === "indicators" ? ["Units"] : []), "Records", "Years"]) {
      const th = document.createElement("th");
      th.scope = "col";
      th.textContent = text;
      head.append(th);
    }
    const body = table.createTBody();
    for (const item of items.slice(0, LISTED)) {
      const row = body.insertRow();
      const link = document.createElement("a");
      const chosen = { ...partial, [field.toLowerCase()]: item[field] };
      link.href = `/explore${stateQuery({ series: [chosen], from: "", to: "" })}`;
      link.textContent = item.name || item[field];
      row.insertCell().append(link);
      row.insertCell().textContent = item[field];
      if (kind === "indicators") row.insertCell().textContent = [item.units, item.scale].filter(Boolean).join(", ");
      row.insertCell().textContent = count(item.records);
      row.insertCell().textContent = `${item.from}–${item.to}`;
    }
    section.append(heading, table);
    if (items.length > LISTED) {
      const more = document.createElement("p");
      more.textContent = `And ${count(items.length - LISTED)} more: type a name or a code in the form.`;
      section.append(more);
    }
    return section;
  }

  let described = Promise.resolve();
  function start() {
    const state = readState(location.search);
    fillForm(state);
    $("add").addEventListener("click", () => addRow().querySelector("input").focus());
    $("choice").addEventListener("submit", (event) => {
      event.preventDefault();
      const chosen = formState();
      // The inputs say the codes as the URL does: upper-case, a name typed become its code.
      for (const input of $("rows").querySelectorAll("input")) {
        input.value = codeOf(input.name === "country" ? "countries" : "indicators", input.value);
      }
      const query = stateQuery(chosen);
      if (query !== location.search && !(query === "?" && !location.search)) history.pushState(null, "", `/explore${query}`);
      run(show(chosen));
    });
    for (const control of [$("show"), $("log")]) control.addEventListener("change", () => $("choice").requestSubmit());
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
    described = describeStore();
    run(described);
    run(show(state));
    let width = 0;
    new ResizeObserver(() => { // a phone turned, a window resized: the chart redrawn to keep its text's size
      const now = Math.min(WIDEST, Math.round($("chart").parentElement.clientWidth));
      if (shown && now && now !== width && !$("result").hidden) { width = now; drawChart(); }
    }).observe($("chart").parentElement);
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
