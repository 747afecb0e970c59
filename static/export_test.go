package static

// Names exports names to the tests.
var Names = names
