// Catch2's main; the test cases live in the other files of this folder.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
