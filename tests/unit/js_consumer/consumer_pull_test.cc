#include "tests/unit/js_consumer/fixture.h"
