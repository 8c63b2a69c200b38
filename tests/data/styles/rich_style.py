"""rich-style code: segments, a console's text rendering and a panel, as rich 13.9 shapes them."""

from typing import Iterable, List, NamedTuple, Optional


class Segment(NamedTuple):
    text: str
    style: Optional[str] = None

    @classmethod
    def line(cls) -> "Segment":
        """Make a new line segment."""
        return cls("\n")

    @classmethod
    def split_lines(cls, segments: Iterable["Segment"]) -> Iterable[List["Segment"]]:
        line: List[Segment] = []
        append = line.append
        for segment in segments:
            if "\n" in segment.text:
                text, style = segment
                while text:
                    _text, new_line, text = text.partition("\n")
                    if _text:
                        append(cls(_text, style))
                    if new_line:
                        yield line[:]
                        del line[:]
            else:
                append(segment)
        if line:
            yield line


def render_lines(lines: List[str], width: int, *, pad: bool = True, new_lines: bool = False) -> str:
    rendered = "\n".join(line.ljust(width) if pad else line for line in lines)
    return rendered + "\n" if new_lines else rendered


def escape(markup: str) -> str:
    return markup.replace("[", "\\[")


class Panel:
    def __init__(self, renderable: str, title: Optional[str] = None, expand: bool = True, padding: int = 1) -> None:
        self.renderable = renderable
        self.title = title
        self.expand = expand
        self.padding = padding

    def __rich_console__(self, console: "Console", options: "ConsoleOptions") -> Iterable[Segment]:
        _padding = self.padding
        style = console.get_style(self.style) if hasattr(self, "style") else None
        border_style = style + console.get_style(self.border_style) if style else None
        width = (
            options.max_width
            if self.expand
            else min(options.max_width, self._measure_width(console, options) + 2)
        )
        safe_box: bool = console.safe_box if self.safe_box is None else self.safe_box
        box = self.box.substitute(options, safe=safe_box)

        def align_text(text: str, width: int, align: str, character: str, style: Optional[str]) -> str:
            excess_space = width - len(text)
            if excess_space <= 0:
                return text[:width]
            if align == "left":
                return text + character * excess_space
            if align == "center":
                left = excess_space // 2
                return character * left + text + character * (excess_space - left)
            return character * excess_space + text

        title_text = self._title
        if title_text is not None:
            title_text = title_text.copy()
            title_text.stylize_before(border_style)
        child_width = (
            width - 2
            if self.expand
            else console.measure(self.renderable, options=options.update_width(width - 2)).maximum
        )
        child_height = self.height or options.height or None
        if child_height:
            child_height -= 2
        if title_text is not None:
            child_width = min(options.max_width - 2, max(child_width, title_text.cell_len + 2))
        width = child_width + 2
        child_options = options.update(width=child_width, height=child_height, highlight=self.highlight)
        lines = console.render_lines(self.renderable, child_options, style=style)
        line_start = Segment(box.mid_left, border_style)
        line_end = Segment(f"{box.mid_right}", border_style)
        new_line = Segment.line()
        if title_text is None or width <= 4:
            yield Segment(box.get_top([width - 2]), border_style)
        else:
            title_text = align_text(title_text, width - 4, self.title_align, box.top, border_style)
            yield Segment(box.top_left + box.top, border_style)
            yield from console.render(title_text, child_options.update_width(width - 4))
            yield Segment(box.top + box.top_right, border_style)
        yield new_line
        for line in lines:
            yield line_start
            yield from line
            yield line_end
            yield new_line
        subtitle_text = self._subtitle
        if subtitle_text is not None:
            subtitle_text = subtitle_text.copy()
            subtitle_text.stylize_before(border_style)
        if subtitle_text is None or width <= 4:
            yield Segment(box.get_bottom([width - 2]), border_style)
        else:
            subtitle_text = align_text(subtitle_text, width - 4, self.subtitle_align, box.bottom, border_style)
            yield Segment(box.bottom_left + box.bottom, border_style)
            yield from console.render(subtitle_text, child_options.update_width(width - 4))
            yield Segment(box.bottom + box.bottom_right, border_style)
        yield new_line
