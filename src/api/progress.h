#pragma once
// Progress lines on stderr, for the commands and the Python package: the
// search tells what it does through SearchOptions::progress and prints
// nothing itself (search/ga.h).

#include <functional>

#include "search/ga.h"

namespace sa::api {

// A SearchOptions::progress that prints each line on stderr. On a terminal
// the generation lines overwrite one another in place and the closing one
// ends the line; in a log each is a line of its own, and a closing line
// that repeats the one before is left out.
std::function<void(const SearchProgress&)> stderr_search_progress();

}  // namespace sa::api
