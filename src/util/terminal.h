#pragma once
// Names and messages made safe to print on a terminal.
//
// Note [Names on a terminal]
// --------------------------
// Every name swapadvisor prints comes from a file someone else may have
// written (graph, op and tensor names, a device profile's name or file stem,
// a plan's method) or from a path. A terminal acts on some of the bytes such
// a name may hold: ESC starts a sequence that can retitle the window, clear
// the screen or recolour what follows; the other C0 controls, DEL and the C1
// controls (U+0080-U+009F, CSI among them) act too; invalid UTF-8 garbles
// what follows; the bidirectional controls (U+202A-U+202E, U+2066-U+2069)
// reorder what is shown. So every name and message printed goes through
// these, which write each such byte or character as an escape that shows:
//
//   terminal_safe("a\x1b[2Jb")    "a\x1b[2Jb"  (a backslash, 'x', '1', 'b', ...)
//   terminal_safe("x\xffy")       "x\xffy"     (the invalid byte, in hex)
//   terminal_safe("\u009b")       "\u009b"     (a C1 control)
//   terminal_safe("line\nnext")   "line\nnext" (a name is one line)
//
// A backslash is written as it is: the text is for people, not to be parsed
// back. terminal_message() keeps newlines and tabs (a message may have
// several lines) and escapes the rest the same way.

#include <string>
#include <string_view>

namespace sa {

std::string terminal_safe(std::string_view s);
std::string terminal_message(std::string_view s);

// The length of the valid UTF-8 sequence at s[i] (1-4), and its code point
// in *cp; 0 when the bytes there are not valid UTF-8 (overlong, a
// surrogate, past U+10FFFF, cut short). REQUIRES: i < s.size().
int utf8_sequence(std::string_view s, size_t i, char32_t* cp);

}  // namespace sa
