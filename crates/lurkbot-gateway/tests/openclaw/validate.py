"""Validates frames a LurkBot gateway sent on OpenClaw's protocol against OpenClaw's published
protocol.schema.json (npm @openclaw/gateway-protocol), with the test venv's jsonschema.

Usage: validate.py SCHEMA FRAMES.jsonl, each line {"method": name-or-null, "frame": frame}.
Every frame is checked as a GatewayFrame; hello-ok, the events and the method results the
schema defines are checked against their own definitions. Prints what was checked; exits 1
naming each frame that does not validate."""

import json
import sys

import jsonschema

RESULTS = {
    "logs.tail": "LogsTailResult",
    "agents.list": "AgentsListResult",
    "models.list": "ModelsListResult",
    "commands.list": "CommandsListResult",
    "question.list": "QuestionListResult",
    "taskSuggestions.list": "TaskSuggestionsListResult",
    "sessions.delete": "SessionsDeleteResult",
}
EVENTS = {
    "agent": "#/definitions/AgentEvent",
    "chat": "#/definitions/ChatEvent",
    "tick": "#/definitions/TickEvent",
    "shutdown": "#/definitions/ShutdownEvent",
    "health": "#/definitions/Snapshot/properties/health",
    "node.invoke.request": "#/definitions/NodeInvokeRequestEvent",
}
# What a node sends (frames marked "sent"): its requests' params.
PARAMS = {
    "connect": "ConnectParams",
    "node.invoke.result": "NodeInvokeResultParams",
    "node.event": "NodeEventParams",
}


def main():
    schema = json.load(open(sys.argv[1]))
    definitions = schema["definitions"]
    cache = {}

    def check(ref, value):
        if ref not in cache:
            root = {"$ref": ref, "definitions": definitions}
            cache[ref] = jsonschema.Draft7Validator(root)
        return [e.message for e in cache[ref].iter_errors(value)]

    failures, checked = [], {}
    for n, line in enumerate(open(sys.argv[2]), 1):
        entry = json.loads(line)
        frame, method = entry["frame"], entry.get("method")
        if entry.get("sent"):
            targets = [("#/definitions/RequestFrame", frame)]
            if method in PARAMS:
                targets.append(("#/definitions/" + PARAMS[method], frame.get("params")))
            for ref, value in targets:
                name = ref.rsplit("/", 1)[-1]
                checked[name] = checked.get(name, 0) + 1
                for error in check(ref, value):
                    failures.append(f"line {n} (sent {method}) as {name}: {error}")
            continue
        targets = [("#/definitions/GatewayFrame", frame)]
        payload = frame.get("payload")
        if frame.get("type") == "res" and frame.get("ok"):
            if isinstance(payload, dict) and payload.get("type") == "hello-ok":
                targets.append(("#/definitions/HelloOk", payload))
            elif method == "node.event":
                targets.append(("#/definitions/NodeEventResult", payload))
            elif method in RESULTS:
                targets.append(("#/definitions/" + RESULTS[method], payload))
            elif method == "system-presence":
                targets += [("#/definitions/PresenceEntry", p) for p in payload]
            elif method in ("sessions.list", "sessions.subscribe"):
                rows = (payload.get("list") or payload).get("sessions", [])
                targets += [("#/definitions/SessionRow", r) for r in rows]
            elif method == "sessions.describe":
                targets.append(("#/definitions/SessionRow", payload["session"]))
        if frame.get("type") == "event" and frame.get("event") in EVENTS:
            targets.append((EVENTS[frame["event"]], payload))
        for ref, value in targets:
            name = ref.rsplit("/", 1)[-1]
            checked[name] = checked.get(name, 0) + 1
            for error in check(ref, value):
                failures.append(f"line {n} ({method or frame.get('event')}) as {name}: {error}")
    print(json.dumps({"checked": checked, "failures": len(failures)}))
    for f in failures[:50]:
        print(f, file=sys.stderr)
    sys.exit(1 if failures else 0)


main()
