// Markdown for the console: the subset models write, built as DOM nodes.
//
// A model's text is untrusted. Nothing here parses HTML: every piece of text becomes a text
// node, every element is made with createElement, and a link is made only for an http(s) or
// mailto address (anything else, `javascript:` first, stays as the text it was written as).
// Images are never loaded: they become links, which is all the page's policy would allow anyway.
// The parser is forgiving and linear enough for a reply re-rendered on every streamed chunk:
// an open code fence runs to the end, and a mark with no closing mark is plain text.
"use strict";

const Markdown = (() => {
  const MAX_DEPTH = 12;  // nesting deeper than this (quotes in lists in quotes...) is shown flat
  const SAFE_URL = /^(https?:\/\/|mailto:)[^\s<>\x22]+$/i;
  const BARE_URL = /^https?:\/\/[^\s<>\x22()]*[^\s<>\x22().,;:!?\x27*_~]/;
  const PUNCT = /[!-/:-@[-\x60{-~]/;  // \x60: a backtick
  const FENCE = /^ {0,3}(\x60{3,}|~{3,})\s*([^\x60\s]*)/;
  const HEADING = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
  const RULE = /^ {0,3}([-*_])(\s*\1){2,}\s*$/;
  const QUOTE = /^ {0,3}> ?/;
  const ITEM = /^( *)([-*+]|\d{1,9}[.)])\s+(.*)$/;
  const TABLE_RULE = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;

  function make(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function safeLink(url, label, depth) {
    const link = make("a");
    link.setAttribute("href", url);
    link.setAttribute("rel", "noopener noreferrer nofollow");
    link.setAttribute("target", "_blank");
    inline(label || url, link, depth + 1);
    return link;
  }

  // -- inline: code spans, emphasis, links, bare URLs, line breaks ---------------------------

  function closing(text, mark, from) {
    let at = text.indexOf(mark, from);
    while (at > 0 && (/\s/.test(text[at - 1]) || (mark.length === 1 && text[at + 1] === mark))) {
      at = text.indexOf(mark, at + (text[at + 1] === mark ? 2 : 1));
    }
    return at;
  }

  function emphasis(text, i, misses) {
    const two = text.slice(i, i + 2);
    const mark = ["**", "__", "~~"].includes(two) ? two : (text[i] === "~" ? "" : text[i]);
    if (!mark || misses.has(mark)) return null;
    const after = text[i + mark.length];
    if (after === undefined || /\s/.test(after)) return null;
    if (mark[0] === "_" && i > 0 && /[A-Za-z0-9]/.test(text[i - 1])) return null;  // snake_case stays
    const end = closing(text, mark, i + mark.length + 1);
    if (end < 0) {
      misses.add(mark);
      return null;
    }
    if (mark[0] === "_" && /[A-Za-z0-9]/.test(text[end + mark.length] || "")) return null;
    const tag = mark === "~~" ? "del" : mark.length === 2 ? "strong" : "em";
    return { tag, inner: text.slice(i + mark.length, end), end: end + mark.length };
  }

  function bracketed(text, i) {  // [label](url) at i (or ![alt](url)): {label, url, end} or null
    const open = text[i] === "!" ? i + 1 : i;
    let depth = 0;
    let close = -1;
    for (let j = open; j < text.length && j < open + 1000; j++) {
      if (text[j] === "\\") j++;
      else if (text[j] === "[") depth++;
      else if (text[j] === "]" && --depth === 0) { close = j; break; }
    }
    if (close < 0 || text[close + 1] !== "(") return null;
    const shut = text.indexOf(")", close + 2);
    if (shut < 0) return null;
    const target = text.slice(close + 2, shut).trim().split(/\s+/)[0] || "";
    return { label: text.slice(open + 1, close), url: target.replace(/^<(.*)>$/, "$1"), end: shut + 1 };
  }

  function codeSpan(text, i) {
    let run = 0;
    while (text[i + run] === "`") run++;
    const ticks = "`".repeat(run);
    let at = text.indexOf(ticks, i + run);
    while (at >= 0 && text[at + run] === "`") at = text.indexOf(ticks, at + run + 1);
    return at < 0 ? { run } : { run, code: text.slice(i + run, at).replace(/^ (.+) $/, "$1"), end: at + run };
  }

  // Each reader looks at text[i]: {node, end} when a construct starts there (node may be plain
  // text: an escape, or backticks no span closes), or null when text[i] is just a character.
  function escapeAt(text, i) {
    return PUNCT.test(text[i + 1] || "") ? { node: text[i + 1], end: i + 2 } : null;
  }

  function codeAt(text, i) {
    const span = codeSpan(text, i);
    if (span.code === undefined) return { node: "`".repeat(span.run), end: i + span.run };
    return { node: make("code", null, span.code), end: span.end };
  }

  function emphasisAt(text, i, depth, misses) {
    const found = emphasis(text, i, misses);
    if (!found) return null;
    const node = make(found.tag);
    inline(found.inner, node, depth + 1);
    return { node, end: found.end };
  }

  function linkAt(text, i, depth) {
    const found = bracketed(text, i);
    if (!found || !SAFE_URL.test(found.url)) return null;  // not a link it may make: the text stays
    return { node: safeLink(found.url, found.label || found.url, depth), end: found.end };
  }

  function bareUrlAt(text, i) {
    if (i > 0 && !/[\s(]/.test(text[i - 1])) return null;
    const bare = BARE_URL.exec(text.slice(i, i + 2048));
    return bare ? { node: safeLink(bare[0], bare[0], MAX_DEPTH), end: i + bare[0].length } : null;
  }

  function inlineAt(text, i, depth, misses) {
    const c = text[i];
    if (c === "\\") return escapeAt(text, i);
    if (c === "`") return codeAt(text, i);
    if (c === "*" || c === "_" || c === "~") return emphasisAt(text, i, depth, misses);
    if (c === "[" || (c === "!" && text[i + 1] === "[")) return linkAt(text, i, depth);
    if (c === "h") return bareUrlAt(text, i);
    if (c === "\n") return { node: make("br"), end: i + 1 };
    return null;
  }

  function inline(text, out, depth) {
    if (depth > MAX_DEPTH) {
      out.append(text);
      return;
    }
    const misses = new Set();  // marks nothing closes further on: later searches for them would fail too
    let plain = "";
    let i = 0;
    while (i < text.length) {
      const found = inlineAt(text, i, depth, misses);
      if (found === null) {
        plain += text[i];
        i++;
        continue;
      }
      if (plain) out.append(plain);
      plain = "";
      out.append(found.node);
      i = found.end;
    }
    if (plain) out.append(plain);
  }

  // -- blocks: fences, headings, rules, quotes, lists, tables, paragraphs --------------------

  function codeBlock(lang, code) {
    const box = make("div", "code-block");
    const head = make("div", "code-head");
    head.append(make("span", "code-lang", lang || "code"));
    const copy = make("button", "copy", "Copy");
    copy.type = "button";
    copy.setAttribute("aria-label", `Copy the ${lang || "code"} block`);
    copy.addEventListener("click", () => {
      const done = (word) => {
        copy.textContent = word;
        setTimeout(() => { copy.textContent = "Copy"; }, 1500);
      };
      if (!navigator.clipboard) {
        done("Select and copy");
        return;
      }
      navigator.clipboard.writeText(code).then(() => done("Copied"), () => done("Select and copy"));
    });
    head.append(copy);
    const pre = make("pre");
    pre.append(make("code", lang ? `language-${lang.replace(/[^\w+#.-]/g, "")}` : null, code));
    box.append(head, pre);
    return box;
  }

  function cells(line) {
    const trimmed = line.trim().replace(/^\|/, "").replace(/\|$/, "");
    return trimmed.split(/(?<!\\)\|/).map((cell) => cell.trim());
  }

  function table(lines, depth) {
    const node = make("table");
    const head = make("thead");
    const row = make("tr");
    for (const cell of cells(lines[0])) {
      const th = make("th");
      inline(cell, th, depth);
      row.append(th);
    }
    head.append(row);
    const body = make("tbody");
    for (const line of lines.slice(2)) {
      const tr = make("tr");
      for (const cell of cells(line)) {
        const td = make("td");
        inline(cell, td, depth);
        tr.append(td);
      }
      body.append(tr);
    }
    node.append(head, body);
    const wrap = make("div", "table-wrap");
    wrap.append(node);
    return wrap;
  }

  function listAt(lines, start, depth) {  // a list starting at lines[start]: {node, next}
    const first = ITEM.exec(lines[start]);
    const indent = first[1].length;
    const ordered = /\d/.test(first[2]);
    const node = make(ordered ? "ol" : "ul");
    if (ordered && parseInt(first[2], 10) !== 1) node.setAttribute("start", String(parseInt(first[2], 10)));
    let i = start;
    while (i < lines.length) {
      const item = ITEM.exec(lines[i]);
      if (!item || item[1].length !== indent || /\d/.test(item[2]) !== ordered) break;
      const body = [item[3]];
      i++;
      while (i < lines.length) {
        const line = lines[i];
        const nested = ITEM.exec(line);
        if (line.trim() === "") {
          if (i + 1 < lines.length && /^\s+\S/.test(lines[i + 1]) && lines[i + 1].search(/\S/) > indent) {
            body.push("");
            i++;
            continue;
          }
          break;
        }
        if (nested && nested[1].length <= indent) break;
        if (!nested && !/^\s/.test(line) && body[body.length - 1] === "") break;
        body.push(line.slice(Math.min(line.search(/\S/), indent + 2)));
        i++;
      }
      const li = make("li");
      if (body.length === 1) inline(body[0], li, depth + 1);
      else li.append(...blocks(body.join("\n"), depth + 1));
      node.append(li);
    }
    return { node, next: i };
  }

  function closesFence(line, opened) {
    const shut = /^ {0,3}(\x60{3,}|~{3,})\s*$/.exec(line);
    return Boolean(shut) && shut[1][0] === opened[0] && shut[1].length >= opened.length;
  }

  function startsBlock(line) {
    return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line) || ITEM.test(line);
  }

  // Each reads the block that starts at lines[i]: {node, next} (next: the line after it), or null
  // when the line starts no such block. A paragraph takes any line, so the last always answers.
  function fenceAt(lines, i) {
    const fence = FENCE.exec(lines[i]);
    if (!fence) return null;
    let end = i + 1;
    while (end < lines.length && !closesFence(lines[end], fence[1])) end++;
    // past the end when the reply has not closed its fence yet: the block runs to the end
    return { node: codeBlock(fence[2], lines.slice(i + 1, end).join("\n")), next: end + 1 };
  }

  function headingAt(lines, i, depth) {
    const heading = HEADING.exec(lines[i]);
    if (!heading) return null;
    const node = make(`h${Math.min(heading[1].length + 2, 6)}`, "md-heading");  // the page has h1 and h2
    inline(heading[2], node, depth + 1);
    return { node, next: i + 1 };
  }

  function ruleAt(lines, i) {
    return RULE.test(lines[i]) ? { node: make("hr"), next: i + 1 } : null;
  }

  function quoteAt(lines, i, depth) {
    if (!QUOTE.test(lines[i])) return null;
    let end = i;
    while (end < lines.length && QUOTE.test(lines[end])) end++;
    const node = make("blockquote");
    node.append(...blocks(lines.slice(i, end).map((line) => line.replace(QUOTE, "")).join("\n"), depth + 1));
    return { node, next: end };
  }

  function itemsAt(lines, i, depth) {
    return ITEM.test(lines[i]) ? listAt(lines, i, depth) : null;
  }

  function tableAt(lines, i, depth) {
    const rule = lines[i + 1];
    if (!lines[i].includes("|") || rule === undefined || !TABLE_RULE.test(rule) || !rule.includes("-")) return null;
    let end = i + 2;
    while (end < lines.length && lines[end].includes("|") && lines[end].trim() !== "") end++;
    return { node: table(lines.slice(i, end), depth + 1), next: end };
  }

  function paragraphAt(lines, i, depth) {
    let end = i + 1;
    while (end < lines.length && lines[end].trim() !== "" && !startsBlock(lines[end])) end++;
    const node = make("p");
    inline(lines.slice(i, end).join("\n").trim(), node, depth + 1);
    return { node, next: end };
  }

  const BLOCK_READERS = [fenceAt, headingAt, ruleAt, quoteAt, itemsAt, tableAt, paragraphAt];

  function blocks(text, depth) {
    if (depth > MAX_DEPTH) return [make("p", null, text)];
    const lines = text.replace(/\r\n?/g, "\n").split("\n");
    const out = [];
    let i = 0;
    while (i < lines.length) {
      if (lines[i].trim() === "") {
        i++;
        continue;
      }
      for (const read of BLOCK_READERS) {
        const found = read(lines, i, depth);
        if (found) {
          out.push(found.node);
          i = found.next;
          break;
        }
      }
    }
    return out;
  }

  // render(text): a fragment of nodes for ``text``, safe to append anywhere
  function render(text) {
    const fragment = document.createDocumentFragment();
    fragment.append(...blocks(String(text), 0));
    return fragment;
  }

  return { render };
})();
