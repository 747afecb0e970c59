package main

import "context"

func runClients(ctx context.Context, args []string) error { return nil }
