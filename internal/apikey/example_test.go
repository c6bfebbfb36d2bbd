package apikey_test

import (
	"fmt"

	"github.com/hopperjobs/hopper/internal/apikey"
)

func ExampleNew() {
	scopes, err := apikey.ParseScopes([]string{"work", "enqueue"})
	if err != nil {
		panic(err)
	}
	plaintext, key, err := apikey.New("billing-workers", scopes)
	if err != nil {
		panic(err)
	}
	// Store key with store.KeyStore.KeyCreate and show plaintext once.
	id, secret, _ := apikey.Parse(plaintext)
	fmt.Println(id == key.ID, apikey.Verify(key, secret), key.Scopes)
	fmt.Println(apikey.Allows(key, apikey.ScopeWork), apikey.Allows(key, apikey.ScopeAdmin))
	// Output:
	// true true [enqueue work]
	// true false
}
