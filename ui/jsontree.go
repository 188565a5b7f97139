package ui

import (
	"strconv"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"inspector/ui/render"
)

// jsonTreeView is the collapsible tree of a JSON body: objects and arrays open and close,
// keys and values in the syntax colours. Only open branches' rows exist (widget.Tree).
type jsonTreeView struct {
	t    *render.JSONTree
	tree *widget.Tree
	box  fyne.CanvasObject
}

func newJSONTreeView() *jsonTreeView {
	v := &jsonTreeView{}
	v.tree = widget.NewTree(v.children, v.isBranch,
		func(bool) fyne.CanvasObject {
			k := canvas.NewText("", theme.Color(theme.ColorNamePrimary))
			k.TextStyle = fyne.TextStyle{Monospace: true}
			val := canvas.NewText("", theme.Color(theme.ColorNameForeground))
			val.TextStyle = fyne.TextStyle{Monospace: true}
			return container.NewHBox(k, val)
		},
		v.update,
	)
	expand := widget.NewButtonWithIcon("Expand all", theme.MoveDownIcon(), func() { v.tree.OpenAllBranches() })
	collapse := widget.NewButtonWithIcon("Collapse all", theme.MoveUpIcon(), func() {
		v.tree.CloseAllBranches()
		v.tree.OpenBranch("0")
	})
	expand.Importance, collapse.Importance = widget.LowImportance, widget.LowImportance
	v.box = container.NewBorder(container.NewHBox(expand, collapse), nil, nil, nil, container.NewThemeOverride(v.tree, &packedTheme{}))
	return v
}

func (v *jsonTreeView) set(t *render.JSONTree) {
	v.t = t
	v.tree.CloseAllBranches()
	v.tree.Refresh()
	v.tree.OpenBranch("0")
	v.tree.ScrollToTop()
}

func nodeIndex(id widget.TreeNodeID) int {
	n, err := strconv.Atoi(id)
	if err != nil {
		return -1
	}
	return n
}

func (v *jsonTreeView) node(id widget.TreeNodeID) *render.JSONNode {
	if v.t == nil {
		return nil
	}
	if n := nodeIndex(id); n >= 0 && n < len(v.t.Nodes) {
		return &v.t.Nodes[n]
	}
	return nil
}

func (v *jsonTreeView) children(id widget.TreeNodeID) []widget.TreeNodeID {
	if id == "" {
		if v.t == nil || len(v.t.Nodes) == 0 {
			return nil
		}
		return []widget.TreeNodeID{"0"}
	}
	n := v.node(id)
	if n == nil {
		return nil
	}
	ids := make([]widget.TreeNodeID, len(n.Children))
	for i, c := range n.Children {
		ids[i] = strconv.Itoa(int(c))
	}
	return ids
}

func (v *jsonTreeView) isBranch(id widget.TreeNodeID) bool {
	if id == "" {
		return true
	}
	n := v.node(id)
	return n != nil && (n.Kind == 'o' || n.Kind == 'a') && len(n.Children) > 0
}

func (v *jsonTreeView) update(id widget.TreeNodeID, _ bool, o fyne.CanvasObject) {
	box := o.(*fyne.Container)
	k, val := box.Objects[0].(*canvas.Text), box.Objects[1].(*canvas.Text)
	k.TextSize, val.TextSize = monoSize(), monoSize()
	n := v.node(id)
	if n == nil {
		k.Text, val.Text = "", ""
	} else {
		k.Text = n.Key
		if n.Key != "" {
			k.Text += ":"
		}
		if n.Key == "" {
			k.Text = "(root)"
		}
		val.Text = n.Value
		k.Color = theme.Color(theme.ColorNamePrimary)
		val.Color = tokenColor(map[byte]render.TokenClass{'s': render.TokString, 'n': render.TokNumber, 'b': render.TokKeyword, 'z': render.TokKeyword, 'o': render.TokPunct, 'a': render.TokPunct}[n.Kind])
	}
	k.Refresh()
	val.Refresh()
	box.Refresh()
}
