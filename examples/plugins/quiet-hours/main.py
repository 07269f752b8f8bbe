"""A before_tool policy as a LurkBot plugin (protocol 1, docs/guide/plugins.md): the tools named
in `[plugins.quiet-hours] tools` (default ["browser"]) run only within `hours` (default
"09:00-18:00", this machine's local time, or the zone named by `timezone`); any other call is
allowed. An allow grants nothing: LurkBot's own rules still decide after it. Python's standard
library only."""

import datetime
import json
import sys
import zoneinfo


def within(hours, now):
    start, end = (datetime.time.fromisoformat(t) for t in hours.split("-"))
    if start <= end:
        return start <= now < end
    return now >= start or now < end  # a window across midnight, such as 22:00-06:00


def write(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


settings = {}
for line in sys.stdin:
    message = json.loads(line)
    method, id = message.get("method"), message.get("id")
    if method == "initialize":
        settings = message["params"].get("config") or {}
        write({"jsonrpc": "2.0", "id": id, "result": {"provides": ["hook:before_tool"]}})
    elif method == "hook.before_tool":
        tool = message["params"]["tool"]
        hours = settings.get("hours", "09:00-18:00")
        zone = settings.get("timezone")
        now = datetime.datetime.now(zoneinfo.ZoneInfo(zone) if zone else None).time()
        if tool in settings.get("tools", ["browser"]) and not within(hours, now):
            reason = f"{tool} is only used between {hours.replace('-', ' and ')}"
            write({"jsonrpc": "2.0", "id": id, "result": {"allow": False, "reason": reason}})
        else:
            write({"jsonrpc": "2.0", "id": id, "result": {"allow": True}})
    elif method == "shutdown":
        write({"jsonrpc": "2.0", "id": id, "result": {}})
    elif method is not None and id is not None:
        write({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": f"method not found: {method}"}})
