"""The README's command lines, read as a test walks them (the adoption walk and the docs test)."""

import re

from kits.smokekit import REPO as ROOT


def readme_path() -> list[str]:
    """The command lines of the first code block in README's "Use it in your guide"."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Use it in your guide\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]
