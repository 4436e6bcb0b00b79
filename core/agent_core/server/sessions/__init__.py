"""The sessions API: sessions in the store, turns on them, and what a person at a client answers.

:mod:`.routes` serves ``/v1/sessions`` (a turn waits for the session's lease, runs in a task
of its own and streams through a :class:`~agent_core.server.http.channel.Channel`);
:mod:`.actions` runs a plugin's action on a stored session; :mod:`.approvals` and
:mod:`.input` take a person's answers (tool approvals, input completions); :mod:`.catalog`
says what the pipeline offers (plugins, UI elements, actions).
"""
