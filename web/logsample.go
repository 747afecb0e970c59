package web

import "time"

// refusalLogEvery is how often a refusal a client can repeat at will (a
// foreign Origin, a foreign Host), or a request the store failed, is
// logged: its metric counts each one, the log says it happens and how many
// times since its last line.
const refusalLogEvery = 10 * time.Second
