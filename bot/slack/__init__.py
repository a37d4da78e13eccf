"""The Slack adapter: slack-bolt in, chat.postMessage out. `runner.SlackAdapter` joins it to a bot process."""
