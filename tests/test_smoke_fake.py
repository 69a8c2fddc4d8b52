import anthropic
import pytest

from loop import ModelConfig, start


def test_real_sdk_round_trip_over_http(fake_api, tmp_path):
    run = start(scenario="list-files", workspace=tmp_path,
                config=ModelConfig(model="claude-test", api_key="sk-test", base_url=fake_api.url, max_retries=0))
    run.run_to_end()
    assert run.state.ended == "end_turn"
    assert "README.txt" in run.state.messages[-1]["content"][0]["text"]
    assert fake_api.headers[0]["authorization"] == "Bearer sk-test"


def test_429_raises_rate_limit(fake_api, tmp_path):
    fake_api.fail(429, headers={"retry-after-ms": "1"})
    run = start(scenario="list-files", workspace=tmp_path,
                config=ModelConfig(model="claude-test", api_key="k", base_url=fake_api.url, max_retries=0))
    run.step()
    with pytest.raises(anthropic.RateLimitError):
        run.step()
    assert len(run.trace) == 1
