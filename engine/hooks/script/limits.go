package script

import (
	"fmt"
	"math"

	"github.com/dop251/goja"
)

// Limits on what one script may build (goja has no memory limit; its Interrupt lands only
// between instructions, never inside a built-in). The built-ins below make one string of
// a size the script asks for in a single call ("x".repeat(1<<30) took 4.9 s and 1.1 GB),
// so they check the size first and throw a RangeError naming the limit. Other long
// built-ins still end at the budget's interrupt, and while one runs over its budget the
// other exchanges do not wait for it (script.lock).
const (
	// maxScriptString bounds a string made by repeat, padStart, padEnd or join (bytes).
	maxScriptString = 64 << 20
	// maxJoinLength bounds the elements join visits (Array(1<<28).join() took 44.7 s).
	maxJoinLength = 1 << 22
	// maxStorePerScript bounds what one script keeps in the store (keys and JSON values).
	maxStorePerScript = 32 << 20
)

func rangeError(rt *goja.Runtime, format string, a ...any) {
	v, err := rt.New(rt.Get("RangeError"), rt.ToValue(fmt.Sprintf(format, a...)))
	if err != nil {
		panic(rt.NewTypeError(fmt.Sprintf(format, a...)))
	}
	panic(v)
}

// limitBuiltins wraps the built-ins of rt that make a string of a requested size.
func limitBuiltins(rt *goja.Runtime) {
	proto := func(ctor string) *goja.Object { return rt.Get(ctor).ToObject(rt).Get("prototype").ToObject(rt) }
	wrap := func(o *goja.Object, name string, check func(this goja.Value, args []goja.Value)) {
		orig, ok := goja.AssertFunction(o.Get(name))
		if !ok {
			return
		}
		f := func(call goja.FunctionCall) goja.Value {
			check(call.This, call.Arguments)
			v, err := orig(call.This, call.Arguments...)
			if err != nil {
				panic(err)
			}
			return v
		}
		o.DefineDataProperty(name, rt.ToValue(f), goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	}
	strLen := func(v goja.Value) float64 {
		if v == nil || goja.IsUndefined(v) || goja.IsNull(v) {
			return 0
		}
		return float64(len(v.String()))
	}
	arg := func(args []goja.Value, i int) goja.Value {
		if i < len(args) {
			return args[i]
		}
		return goja.Undefined()
	}
	sp := proto("String")
	wrap(sp, "repeat", func(this goja.Value, args []goja.Value) {
		if n := arg(args, 0).ToFloat(); n > 0 && !math.IsInf(n, 1) && strLen(this)*n > maxScriptString {
			rangeError(rt, "repeat: the result would be %.0f bytes, more than the script limit of %d", strLen(this)*n, maxScriptString)
		}
	})
	for _, name := range []string{"padStart", "padEnd"} {
		wrap(sp, name, func(this goja.Value, args []goja.Value) {
			if n := arg(args, 0).ToFloat(); n > maxScriptString {
				rangeError(rt, "%s: the result would be %.0f characters, more than the script limit of %d", name, n, maxScriptString)
			}
		})
	}
	wrap(proto("Array"), "join", func(this goja.Value, args []goja.Value) {
		o, ok := this.(*goja.Object)
		if !ok {
			return
		}
		n := o.Get("length").ToFloat()
		sep := 1.0
		if s := arg(args, 0); !goja.IsUndefined(s) {
			sep = strLen(s)
		}
		if n > maxJoinLength || (n-1)*sep > maxScriptString {
			rangeError(rt, "join: %.0f elements, more than the script limit of %d elements or %d bytes", n, maxJoinLength, maxScriptString)
		}
	})
}
