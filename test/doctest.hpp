// test/doctest.hpp — doctest from Debian (<doctest/doctest.h>) or from the
// subprojects/doctest.wrap fallback (whose meson.build exposes <doctest.h>).
#pragma once

#if __has_include(<doctest/doctest.h>)
#include <doctest/doctest.h>
#else
#include <doctest.h>
#endif
