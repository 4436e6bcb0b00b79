"""A streamed Responses answer, event by event: the buffer the hot path fills, and the answer it closes into.

The stream of the Responses API is made of semantic events, each naming the
output item it belongs to by ``output_index``. The hot path keeps what they
carry in a small buffer, one table per kind of piece (arguments, refusal,
summary, raw reasoning text), each ``{output_index: Pieces}``, so a chunk costs
one dict copy of a table with a handful of keys; text has a state key of its
own (see :mod:`.openai_responses`). Which handler takes which event is a table
(:data:`HANDLERS`), not a chain of ifs.

When the stream ends, every item the API closed (``response.output_item.done``)
is taken as it was sent; an item it never closed (a cut answer, or a server that
sends only deltas) is rebuilt from its opening and its deltas. A server that
sent no item events at all still lists the items in its terminal response.
A server that answers a streaming request with one JSON response object gets
the opposite treatment: :func:`answer_events` turns it into the events its
stream would have carried, so the same hot path builds the answer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from agent_core.plugin_kit import push, reasoning_partial, text_of

from ._responses_wire import finish_reason, mark_cut_calls

__all__ = ["HANDLERS", "PREAMBLE", "answer_events", "fresh_buffer", "is_preamble", "native_answer", "streamed_items"]

Dict = dict[str, Any]
PREAMBLE = frozenset({"response.created", "response.in_progress", "response.queued"})


def fresh_buffer() -> Dict:
    """What a streamed call collects, by ``output_index``: the items opened and closed, streamed pieces.

    ``response`` is the response object of the latest lifecycle event
    (created, then completed / incomplete), whose status, usage and
    ``incomplete_details`` the answer keeps.
    """
    return {"opened": {}, "done": {}, "args": {}, "refusal": {}, "summary": {}, "thinking": {}, "response": None}


# -- the hot path's event handlers: (buffer, event) -> (partials, buffer) -------------------------


def _index(event: Mapping[str, Any]) -> int:
    index = event.get("output_index")
    return index if index is not None else 0


def _pushed(buffer: Dict, key: str, event: Mapping[str, Any]) -> Dict:
    table = buffer[key]
    index = _index(event)
    return {**buffer, key: {**table, index: push(table.get(index), event["delta"])}}


def _on_response(buffer: Dict, event: Mapping[str, Any]) -> tuple[list, Dict]:
    response = event.get("response") or {}
    return [], {**buffer, "response": response}


def _on_item_added(buffer: Dict, event: Mapping[str, Any]) -> tuple[list, Dict]:
    return [], {**buffer, "opened": {**buffer["opened"], _index(event): event["item"]}}


def _on_item_done(buffer: Dict, event: Mapping[str, Any]) -> tuple[list, Dict]:
    """An item closed; a reasoning one is also shown at once, whole (``metadata["reasoning_item"]``).

    Its ``encrypted_content`` comes only here, so a Responses client downstream gets the
    item as the API closed it at the same point of its own stream.
    """
    item = event["item"]
    buffer = {**buffer, "done": {**buffer["done"], _index(event): item}}
    if item["type"] != "reasoning":
        return [], buffer
    return [{"role": "assistant", "content": "", "metadata": {"reasoning_item": item}}], buffer


def _on_arguments(buffer: Dict, event: Mapping[str, Any]) -> tuple[list, Dict]:
    return [], _pushed(buffer, "args", event)


def _on_arguments_done(buffer: Dict, event: Mapping[str, Any]) -> tuple[list, Dict]:
    """The whole argument text: it replaces the pieces (a server may send it without deltas)."""
    arguments = event.get("arguments")
    if not isinstance(arguments, str):
        return [], buffer
    return [], {**buffer, "args": {**buffer["args"], _index(event): push(None, arguments)}}


def _on_refusal(buffer: Dict, event: Mapping[str, Any]) -> tuple[list, Dict]:
    return [], _pushed(buffer, "refusal", event)


def _on_summary(buffer: Dict, event: Mapping[str, Any]) -> tuple[list, Dict]:
    """A summary delta: kept per item and per summary part, and shown at once as a reasoning partial.

    The partial names the item and the summary part (``metadata["reasoning_part"]``), so a
    Responses client downstream can be streamed the same item and parts.
    """
    delta = event["delta"]
    if not delta:
        return [], buffer
    index, part = _index(event), event.get("summary_index") or 0
    parts = buffer["summary"].get(index) or {}
    summary = {**buffer["summary"], index: {**parts, part: push(parts.get(part), delta)}}
    partial = reasoning_partial(delta)
    item_id = event.get("item_id") or (buffer["opened"].get(index) or {}).get("id")
    partial["metadata"]["reasoning_part"] = {"id": item_id, "summary_index": part}
    return [partial], {**buffer, "summary": summary}


def _on_thinking(buffer: Dict, event: Mapping[str, Any]) -> tuple[list, Dict]:
    """Raw reasoning text (open-weight models behind compatible servers): shown like a summary."""
    if not event["delta"]:
        return [], buffer
    return [reasoning_partial(event["delta"])], _pushed(buffer, "thinking", event)


#: Event type -> handler. Text deltas are handled before the table (they are most of the stream);
#: other events (content parts opened and closed, ``*.done`` events repeating the text) change nothing.
HANDLERS: dict[str, Callable[[Dict, Mapping[str, Any]], tuple[list, Dict]]] = {
    "response.created": _on_response,
    "response.in_progress": _on_response,
    "response.completed": _on_response,
    "response.incomplete": _on_response,
    "response.output_item.added": _on_item_added,
    "response.output_item.done": _on_item_done,
    "response.function_call_arguments.delta": _on_arguments,
    "response.function_call_arguments.done": _on_arguments_done,
    "response.refusal.delta": _on_refusal,
    "response.reasoning_summary_text.delta": _on_summary,
    "response.reasoning_text.delta": _on_thinking,
}


# -- the closing step: the streamed items as one answer --------------------------------------------


def _rebuilt(opened: Mapping[str, Any] | None, index: int, buffer: Mapping[str, Any], texts: Mapping) -> Dict:
    """An item the stream never closed, from its opening and its deltas (a cut answer, a terse server)."""
    item: Dict = dict(opened or {})
    if not item.get("type"):
        item["type"] = "function_call" if index in buffer["args"] else (
            "reasoning" if index in buffer["summary"] or index in buffer["thinking"] else "message")
    kind = item["type"]
    if kind == "message":
        content: list[Dict] = []
        if texts.get(index) is not None:
            content.append({"type": "output_text", "text": text_of(texts[index]), "annotations": []})
        if buffer["refusal"].get(index) is not None:
            content.append({"type": "refusal", "refusal": text_of(buffer["refusal"][index])})
        item.setdefault("role", "assistant")
        item["content"] = content
    elif kind == "function_call":
        item["arguments"] = text_of(buffer["args"].get(index))
    elif kind == "reasoning":
        parts = buffer["summary"].get(index) or {}
        item["summary"] = [{"type": "summary_text", "text": text_of(parts[n])} for n in sorted(parts)]
        if buffer["thinking"].get(index) is not None:
            item["content"] = [{"type": "reasoning_text", "text": text_of(buffer["thinking"][index])}]
    if item.get("status") == "in_progress":
        item["status"] = "incomplete"
    return item


def streamed_items(buffer: Mapping[str, Any], texts: Mapping) -> list[Dict]:
    """The answer's output items in order: each as the API closed it, else rebuilt from what streamed.

    A server that streams no item events at all still sends the items in
    its terminal response; they are taken from there.
    """
    seen = set(buffer["opened"]) | set(buffer["done"]) | set(texts)
    for key in ("args", "refusal", "summary", "thinking"):
        seen |= set(buffer[key])
    if not seen:
        response = buffer.get("response") or {}
        return [dict(i) for i in response.get("output") or ()]
    return [_closed(buffer["done"][i], i, buffer, texts) if i in buffer["done"]
            else _rebuilt(buffer["opened"].get(i), i, buffer, texts) for i in sorted(seen)]


def _closed(item: Mapping[str, Any], index: int, buffer: Mapping[str, Any], texts: Mapping) -> Dict:
    """An item as the API closed it; rebuilt from its deltas when it came back emptier than they were.

    OpenAI's closing item repeats everything streamed; a compatible server may close an item with an
    empty ``content`` or ``arguments`` after streaming them, and the streamed pieces must not be lost.
    """
    kind = item.get("type")
    if (kind == "message" and not item.get("content") and (index in texts or index in buffer["refusal"])) or (
            kind == "function_call" and not item.get("arguments") and index in buffer["args"]):
        return {**_rebuilt(item, index, buffer, texts), "status": item.get("status") or "completed"}
    return dict(item)


def native_answer(items: list[Dict], response: Mapping[str, Any] | None) -> Dict:
    """The native assistant entry for an answer's items and its response object (status, usage, id)."""
    response = response or {}
    status = response.get("status") or "completed"
    incomplete = response.get("incomplete_details")
    items = mark_cut_calls(items, status)
    message: Dict = {"role": "assistant", "items": items, "_status": status,
                     "_finish_reason": finish_reason(status, incomplete, items)}
    if status == "incomplete" and isinstance(incomplete, Mapping) and incomplete.get("reason"):
        message["_incomplete_reason"] = incomplete["reason"]
    if response.get("usage"):
        message["_usage"] = response["usage"]
    if response.get("id"):
        message["_response_id"] = response["id"]
    if isinstance(response.get("service_tier"), str):
        message["_service_tier"] = response["service_tier"]
    return message


def is_preamble(event: Mapping[str, Any]) -> bool:
    """Lifecycle events that carry no output yet: a failure right after them is retried without a retract."""
    return event.get("type") in PREAMBLE


# -- a JSON answer replayed as a stream ---------------------------------------------------------------


def answer_events(answer: Mapping[str, Any]) -> list[Dict]:
    """A complete response object as the events its stream would have carried.

    For a server that answers a streaming request with one JSON document:
    each output item is opened, its text, summary or arguments streamed in
    one delta, and closed; then the terminal event of its status.
    """
    output = [i for i in answer.get("output") or () if isinstance(i, Mapping)]
    events: list[Dict] = [{"type": "response.created", "response": {**answer, "output": []}}]
    for index, item in enumerate(output):
        kind = item.get("type")
        events.append({"type": "response.output_item.added", "output_index": index, "item": dict(item)})
        if kind == "message":
            for part in item.get("content") or ():
                if isinstance(part, Mapping) and part.get("type") == "output_text" and part.get("text"):
                    events.append({"type": "response.output_text.delta", "output_index": index,
                                   "delta": part["text"]})
        elif kind == "reasoning":
            for n, part in enumerate(item.get("summary") or ()):
                if isinstance(part, Mapping) and part.get("text"):
                    events.append({"type": "response.reasoning_summary_text.delta", "output_index": index,
                                   "summary_index": n, "delta": part["text"]})
        events.append({"type": "response.output_item.done", "output_index": index, "item": dict(item)})
    status = answer.get("status")
    terminal = "response.incomplete" if status == "incomplete" else "response.completed"
    events.append({"type": terminal, "response": dict(answer)})
    return events
