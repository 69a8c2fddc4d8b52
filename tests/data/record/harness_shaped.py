"""A program that talks to the model's API as Claude Code 2.1 does, over plain HTTP (httpx2), for the record tests.

It reads its task from stdin, then: checks the endpoint is there (HEAD /api/hello), counts tokens, asks a small
model for a title (no tools), and runs its loop with its own `Bash` tool: the person's task wrapped in a
<system-reminder>, its environment block as a `role: "system"` turn after it, the `cache_control` mark moved to the
newest message each call and the system turn sent back as a string. It runs each command itself, prints the
model's last words on stdout, and exits 3 (the recorder must pass that on).
"""

import os
import subprocess
import sys

import httpx2 as httpx

BASE = os.environ["ANTHROPIC_BASE_URL"]
HEADERS = {"x-api-key": os.environ["ANTHROPIC_API_KEY"], "anthropic-version": "2023-06-01"}
TOOLS = [{"name": "Bash", "description": "Run a command.", "input_schema": {
    "type": "object", "properties": {"command": {"type": "string"}, "timeout": {"type": "number"}},
    "required": ["command"]}}]
SYSTEM = [{"type": "text", "text": "You are a coding agent."}]

task = sys.stdin.readline().strip()
client = httpx.Client(base_url=BASE, headers=HEADERS, timeout=60)
client.head("/api/hello")
client.post("/v1/messages/count_tokens?beta=true", json={"model": "big-model", "messages": [
    {"role": "user", "content": task}]})
title = client.post("/v1/messages?beta=true", json={"model": "small-model", "max_tokens": 32, "system": [
    {"type": "text", "text": "Write a title for the conversation."}], "messages": [{"role": "user", "content": task}]})
assert title.status_code == 200, title.text
environment = "# Environment\nPrimary working directory: " + os.getcwd()
messages = [
    {"role": "user", "content": [
        {"type": "text", "text": "<system-reminder>\nAttribution for commits: add a line.\n</system-reminder>\n"},
        {"type": "text", "text": task}]},
    {"role": "system", "content": [{"type": "text", "text": environment, "cache_control": {"type": "ephemeral"}}]},
]
while True:
    answer = client.post("/v1/messages?beta=true", json={"model": "big-model", "max_tokens": 128000,
                                                          "system": SYSTEM, "tools": TOOLS, "messages": messages})
    assert answer.status_code == 200, answer.text
    response = answer.json()
    messages[1] = {"role": "system", "content": environment}  # sent back as a string, its mark gone
    messages.append({"role": "assistant", "content": response["content"]})
    if response["stop_reason"] != "tool_use":
        break
    results = []
    for block in response["content"]:
        if block["type"] == "tool_use":
            ran = subprocess.run(block["input"]["command"], shell=True, capture_output=True, text=True)
            results.append({"type": "tool_result", "tool_use_id": block["id"], "content": ran.stdout + ran.stderr,
                            "is_error": ran.returncode != 0})
    results[-1]["cache_control"] = {"type": "ephemeral"}
    messages.append({"role": "user", "content": results})
print(" ".join(b.get("text", "") for b in response["content"] if b["type"] == "text"))
sys.exit(3)
