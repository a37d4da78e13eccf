"""The Slack adapter: slack-bolt in, chat.postMessage out. `runner.run_slack` is the entry point."""
