"""The events besides messages: welcome, the bot menu, 👍/👎 feedback and document comments."""
