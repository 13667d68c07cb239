"""The report's renderings (``formats``: the --html, --junit, --markdown and --badge flags) and views.

``add_flags`` lives here, not in formats.py, so that the CLI's parser (``--help``) declares the flags without
importing the renderers.
"""


def add_flags(parser) -> None:
    """The rendering flags of ``certify`` and ``report``; each name is a key of ``formats.FORMATS``."""
    parser.add_argument("--html", metavar="PATH", help="write the self-contained HTML report (with pictures) to PATH")
    parser.add_argument("--junit", metavar="PATH", help="write JUnit XML (one testcase per check) to PATH")
    parser.add_argument("--markdown", metavar="PATH", help="write a Markdown summary for a pull-request comment")
    parser.add_argument("--badge", metavar="PATH", help="write an SVG badge (conformance | 104/104) to PATH")
