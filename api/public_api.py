#!/usr/bin/env python3
"""The crate's public API as a sorted list of lines, checked against the
committed snapshot, so that every change to the surface is deliberate.

    python3 api/public_api.py            # compare with api/public-api.txt
    python3 api/public_api.py --bless    # rewrite api/public-api.txt

It builds the rustdoc JSON of the library with every feature on (nightly:
`cargo +nightly rustdoc --lib --all-features -- -Zunstable-options
--output-format json`), walks the public items from the crate root (through
re-exports; `#[doc(hidden)]` items are not in the JSON and are no part of
the API), and writes one line per item: modules, types with their
generics and attributes (`#[non_exhaustive]`, `#[must_use]`), fields and
variants, functions and methods with their signatures, constants with
their types, trait implementations (auto traits such as `Send` included,
blanket implementations left out). A difference exits 1 with a unified
diff: rerun with `--bless` when the change is meant, and commit the file
with the change (a removed or changed line is a breaking change; the
CHANGELOG says so).

Only the standard library and the rustdoc JSON of the nightly toolchain are
needed (no cargo-public-api).
"""

import difflib
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SNAPSHOT = os.path.join(ROOT, "api", "public-api.txt")
CRATE = "cipherio"
STABLE_AUTO_TRAITS = {"Send", "Sync", "Unpin", "UnwindSafe", "RefUnwindSafe"}


def build_json():
    """Runs rustdoc for JSON; returns the parsed document."""
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    cmd = ["cargo", "+nightly", "rustdoc", "--lib", "--all-features", "--quiet",
           "--", "-Zunstable-options", "--output-format", "json"]
    # RUSTDOCFLAGS of the caller (--cfg docsrs, say) would change what is
    # documented: the snapshot is of the plain build.
    env = dict(os.environ)
    env.pop("RUSTDOCFLAGS", None)
    subprocess.run(cmd, cwd=ROOT, check=True, env=env)
    with open(os.path.join(target, "doc", CRATE + ".json"), encoding="utf-8") as f:
        return json.load(f)


class Api:
    def __init__(self, doc):
        self.doc = doc
        self.index = doc["index"]
        self.paths = doc["paths"]
        self.lines = set()
        # The crate's items by id: the public path they are reachable by
        # (the shortest, then the first in order), not the private module
        # they are defined in, which is no part of the API.
        self.public_paths = {}

    # ----- rendering of types, bounds and generics -----

    def path_name(self, p):
        """A path (of a type or trait) with its generic arguments."""
        name = p.get("path", p.get("name", "?"))
        pid = str(p.get("id"))
        if pid in self.public_paths:
            name = self.public_paths[pid]
        elif pid in self.paths:
            name = "::".join(self.paths[pid]["path"])
        return name + self.args(p.get("args"))

    def args(self, a):
        if not a:
            return ""
        if "angle_bracketed" in a:
            ab = a["angle_bracketed"]
            parts = []
            for g in ab.get("args", []):
                if "lifetime" in g:
                    parts.append(g["lifetime"])
                elif "type" in g:
                    parts.append(self.ty(g["type"]))
                elif "const" in g:
                    c = g["const"]
                    parts.append(c.get("expr", str(c)) if isinstance(c, dict) else str(c))
                else:
                    parts.append("_")
            for c in ab.get("constraints", ab.get("bindings", [])):
                b = c.get("binding", {})
                if "equality" in b:
                    eq = b["equality"]
                    rhs = self.ty(eq["type"]) if "type" in eq else str(eq)
                    parts.append(f"{c['name']} = {rhs}")
                else:
                    parts.append(f"{c['name']}: {self.bounds(b.get('constraint', []))}")
            return "<" + ", ".join(parts) + ">" if parts else ""
        if "parenthesized" in a:
            pa = a["parenthesized"]
            out = "(" + ", ".join(self.ty(t) for t in pa["inputs"]) + ")"
            if pa.get("output"):
                out += " -> " + self.ty(pa["output"])
            return out
        return ""

    def ty(self, t):
        if t is None:
            return "()"
        if isinstance(t, str):
            return "_" if t == "infer" else t
        (k, v), = t.items()
        if k == "resolved_path":
            return self.path_name(v)
        if k == "generic":
            return v
        if k == "primitive":
            return v
        if k == "borrowed_ref":
            lt = (v["lifetime"] + " ") if v.get("lifetime") else ""
            mut = "mut " if v.get("is_mutable", v.get("mutable")) else ""
            return f"&{lt}{mut}{self.ty(v['type'])}"
        if k == "raw_pointer":
            mut = "mut" if v.get("is_mutable", v.get("mutable")) else "const"
            return f"*{mut} {self.ty(v['type'])}"
        if k == "slice":
            return f"[{self.ty(v)}]"
        if k == "array":
            return f"[{self.ty(v['type'])}; {v['len']}]"
        if k == "tuple":
            return "(" + ", ".join(self.ty(x) for x in v) + ("," if len(v) == 1 else "") + ")"
        if k == "impl_trait":
            return "impl " + self.bounds(v)
        if k == "dyn_trait":
            parts = [self.poly_trait(x) for x in v["traits"]]
            if v.get("lifetime"):
                parts.append(v["lifetime"])
            return "dyn " + " + ".join(parts)
        if k == "qualified_path":
            trait = self.path_name(v["trait"]) if v.get("trait") else "_"
            return f"<{self.ty(v['self_type'])} as {trait}>::{v['name']}{self.args(v.get('args'))}"
        if k == "function_pointer":
            sig = v.get("sig", v.get("decl"))
            ins = ", ".join(self.ty(x[1]) for x in sig["inputs"])
            out = f" -> {self.ty(sig['output'])}" if sig.get("output") else ""
            return f"fn({ins}){out}"
        return k

    def poly_trait(self, pt):
        hrtb = self.hrtb(pt.get("generic_params", []))
        return hrtb + self.path_name(pt["trait"])

    def hrtb(self, params):
        if not params:
            return ""
        return "for<" + ", ".join(p["name"] for p in params) + "> "

    def bounds(self, bs):
        out = []
        for b in bs:
            if "trait_bound" in b:
                tb = b["trait_bound"]
                m = tb.get("modifier", "none")
                pre = "?" if m == "maybe" else ("~const " if m == "maybe_const" else "")
                out.append(pre + self.hrtb(tb.get("generic_params", [])) + self.path_name(tb["trait"]))
            elif "outlives" in b:
                out.append(b["outlives"])
            elif "use" in b:
                out.append("use<" + ", ".join(str(x) for x in b["use"]) + ">")
        return " + ".join(out)

    def generics(self, g):
        """`<params>` and ` where ...` of a generics block."""
        params = []
        for p in g.get("params", []):
            kind = p["kind"]
            if "lifetime" in kind:
                outl = kind["lifetime"].get("outlives", [])
                params.append(p["name"] + (": " + " + ".join(outl) if outl else ""))
            elif "type" in kind:
                tk = kind["type"]
                if tk.get("is_synthetic", tk.get("synthetic")):
                    continue
                s = p["name"]
                if tk.get("bounds"):
                    s += ": " + self.bounds(tk["bounds"])
                if tk.get("default"):
                    s += " = " + self.ty(tk["default"])
                params.append(s)
            elif "const" in kind:
                params.append(f"const {p['name']}: {self.ty(kind['const']['type'])}")
        preds = []
        for w in g.get("where_predicates", []):
            if "bound_predicate" in w:
                bp = w["bound_predicate"]
                preds.append(self.hrtb(bp.get("generic_params", [])) + self.ty(bp["type"]) + ": " + self.bounds(bp["bounds"]))
            elif "lifetime_predicate" in w:
                lp = w["lifetime_predicate"]
                preds.append(lp["lifetime"] + ": " + " + ".join(lp["outlives"]))
            elif "eq_predicate" in w:
                ep = w["eq_predicate"]
                preds.append(self.ty(ep["lhs"]) + " == " + json.dumps(ep["rhs"], sort_keys=True))
        return ("<" + ", ".join(params) + ">" if params else ""), (" where " + ", ".join(preds) if preds else "")

    def attrs(self, item):
        """The attributes that are API: `#[non_exhaustive]`, `#[must_use]`,
        `#[repr]`, deprecation."""
        out = []
        for a in item.get("attrs", []):
            if isinstance(a, str):
                text = a if a.startswith("#[") else f"#[{a}]"
            elif isinstance(a, dict):
                (k, v), = a.items()
                if k == "other":
                    text = v
                elif k == "must_use":
                    reason = (v or {}).get("reason")
                    text = "#[must_use]" if not reason else f"#[must_use = {json.dumps(reason)}]"
                elif k == "non_exhaustive":
                    text = "#[non_exhaustive]"
                elif k == "repr":
                    text = "#[repr(" + json.dumps(v, sort_keys=True) + ")]"
                else:
                    continue
            else:
                continue
            text = " ".join(text.split())
            if text.startswith("#[must_use") or text.startswith("#[non_exhaustive") or text.startswith("#[repr"):
                out.append(text)
        if item.get("deprecation"):
            out.append("#[deprecated]")
        return "".join(" " + a for a in sorted(out))

    def fn_sig(self, inner, name):
        sig = inner.get("sig", inner.get("decl"))
        h = inner.get("header", {})
        quals = ""
        if h.get("is_const", h.get("const")):
            quals += "const "
        if h.get("is_async", h.get("async")):
            quals += "async "
        if h.get("is_unsafe", h.get("unsafe")):
            quals += "unsafe "
        params, where = self.generics(inner.get("generics", {}))
        ins = []
        for n, t in sig["inputs"]:
            if n == "self":
                rendered = self.ty(t)
                ins.append({"Self": "self", "&Self": "&self", "&mut Self": "&mut self"}.get(rendered, "self: " + rendered))
            else:
                ins.append(f"{n}: {self.ty(t)}")
        out = f" -> {self.ty(sig['output'])}" if sig.get("output") else ""
        return f"{quals}fn {name}{params}({', '.join(ins)}){out}{where}"

    # ----- the walk -----

    def add(self, line):
        self.lines.add(line)

    def public(self, item):
        return item.get("visibility") == "public"

    def walk_module(self, mid, path, seen):
        if mid in seen:
            return
        seen = seen | {mid}
        m = self.index[str(mid)]
        self.add(f"pub mod {path}")
        for cid in m["inner"]["module"]["items"]:
            item = self.index.get(str(cid))
            if item is None or not self.public(item):
                continue
            kind, inner = next(iter(item["inner"].items()))
            if kind == "use":
                target = inner.get("id")
                name = inner["name"]
                if inner.get("is_glob", inner.get("glob")):
                    self.add(f"pub use {path}::{inner['source']}::*")
                    continue
                t = self.index.get(str(target)) if target is not None else None
                if t is None:
                    # A re-export of another crate's item: the path is the API.
                    self.add(f"pub use {path}::{name} = {inner['source']}")
                    continue
                self.item(t, f"{path}::{name}", seen)
            else:
                self.item(item, f"{path}::{item['name']}", seen)

    def item(self, item, path, seen):
        kind, inner = next(iter(item["inner"].items()))
        attrs = self.attrs(item)
        if kind == "module":
            self.walk_module(item["id"], path, seen)
        elif kind == "struct":
            params, where = self.generics(inner["generics"])
            sk = inner["kind"]
            self.add(f"pub struct {path}{params}{where}{attrs}")
            if isinstance(sk, dict) and "plain" in sk:
                for fid in sk["plain"]["fields"]:
                    f = self.index[str(fid)]
                    if self.public(f):
                        self.add(f"pub {path}::{f['name']}: {self.ty(f['inner']['struct_field'])}")
            elif isinstance(sk, dict) and "tuple" in sk:
                for i, fid in enumerate(sk["tuple"]):
                    if fid is not None and self.public(self.index[str(fid)]):
                        self.add(f"pub {path}::{i}: {self.ty(self.index[str(fid)]['inner']['struct_field'])}")
            self.impls(inner.get("impls", []), path)
        elif kind == "enum":
            params, where = self.generics(inner["generics"])
            self.add(f"pub enum {path}{params}{where}{attrs}")
            for vid in inner["variants"]:
                self.variant(self.index[str(vid)], path)
            self.impls(inner.get("impls", []), path)
        elif kind == "trait":
            params, where = self.generics(inner["generics"])
            b = (": " + self.bounds(inner["bounds"])) if inner.get("bounds") else ""
            unsafe = "unsafe " if inner.get("is_unsafe") else ""
            self.add(f"pub {unsafe}trait {path}{params}{b}{where}{attrs}")
            for iid in inner["items"]:
                self.assoc(self.index[str(iid)], path, in_trait=True)
            for iid in inner.get("implementations", []):
                self.impl_line(self.index[str(iid)], None)
        elif kind == "function":
            self.add(f"pub {self.fn_sig(inner, path)}{attrs}")
        elif kind == "constant":
            self.add(f"pub const {path}: {self.ty(inner['type'])}")
        elif kind == "static":
            mut = "mut " if inner.get("is_mutable", inner.get("mutable")) else ""
            self.add(f"pub static {mut}{path}: {self.ty(inner['type'])}")
        elif kind == "type_alias":
            params, where = self.generics(inner["generics"])
            self.add(f"pub type {path}{params} = {self.ty(inner['type'])}{where}")
        elif kind == "macro":
            self.add(f"pub macro {path}!")
        else:
            self.add(f"pub {kind} {path}")

    def variant(self, v, enum_path):
        attrs = self.attrs(v)
        vk = v["inner"]["variant"]["kind"]
        path = f"{enum_path}::{v['name']}"
        if vk == "plain":
            self.add(f"pub variant {path}{attrs}")
        elif "tuple" in vk:
            tys = [self.ty(self.index[str(f)]["inner"]["struct_field"]) if f is not None else "_" for f in vk["tuple"]]
            self.add(f"pub variant {path}({', '.join(tys)}){attrs}")
        elif "struct" in vk:
            fields = []
            for fid in vk["struct"]["fields"]:
                f = self.index[str(fid)]
                fields.append(f"{f['name']}: {self.ty(f['inner']['struct_field'])}")
            self.add(f"pub variant {path} {{ {', '.join(fields)} }}{attrs}")

    def impls(self, ids, path):
        for iid in ids:
            imp = self.index[str(iid)]
            inner = imp["inner"]["impl"]
            if inner.get("blanket_impl") is not None:
                continue
            if inner.get("trait") is None:
                for aid in inner["items"]:
                    a = self.index[str(aid)]
                    if self.public(a):
                        self.assoc(a, path, in_trait=False, impl_generics=inner["generics"])
            else:
                self.impl_line(imp, path)

    def impl_line(self, imp, _path):
        inner = imp["inner"]["impl"]
        if inner.get("blanket_impl") is not None:
            return
        # Auto traits that are not stable (Freeze, UnsafeUnpin, ...) come
        # and go with the nightly toolchain: only the stable ones are API.
        if inner.get("is_synthetic", inner.get("synthetic")):
            name = self.path_name(inner["trait"]).split("::")[-1].split("<")[0]
            if name not in STABLE_AUTO_TRAITS:
                return
        params, where = self.generics(inner["generics"])
        neg = "!" if inner.get("is_negative", inner.get("negative")) else ""
        unsafe = "unsafe " if inner.get("is_unsafe") else ""
        trait = self.path_name(inner["trait"])
        self.add(f"{unsafe}impl{params} {neg}{trait} for {self.ty(inner['for'])}{where}")

    def assoc(self, a, path, in_trait, impl_generics=None):
        kind, inner = next(iter(a["inner"].items()))
        attrs = self.attrs(a)
        vis = "" if in_trait else "pub "
        # An inherent item is listed under its type; the impl block's
        # generics and bounds, which say when it exists, follow it.
        within = ""
        if impl_generics:
            params, where = self.generics(impl_generics)
            if params or where:
                within = f" (in impl{params}{where})"
        owner = f"{path}::{a['name']}"
        if kind == "function":
            provided = " {provided}" if in_trait and inner.get("has_body") else ""
            self.add(f"{vis}{self.fn_sig(inner, owner)}{provided}{within}{attrs}")
        elif kind in ("assoc_const", "constant"):
            self.add(f"{vis}const {owner}: {self.ty(inner['type'])}{within}")
        elif kind == "assoc_type":
            b = (": " + self.bounds(inner["bounds"])) if inner.get("bounds") else ""
            t = (" = " + self.ty(inner["type"])) if inner.get("type") else ""
            self.add(f"{vis}type {owner}{b}{t}{within}")


def public_paths(doc):
    """Each public item's id with the public path it is reachable by."""
    index = doc["index"]
    found = {}

    def visit(mid, path, seen):
        if mid in seen:
            return
        for cid in index[str(mid)]["inner"]["module"]["items"]:
            item = index.get(str(cid))
            if item is None or item.get("visibility") != "public":
                continue
            kind, inner = next(iter(item["inner"].items()))
            if kind == "use":
                if inner.get("is_glob", inner.get("glob")) or inner.get("id") is None:
                    continue
                target, name = inner["id"], inner["name"]
            else:
                target, name = cid, item["name"]
            t = index.get(str(target))
            if t is None:
                continue
            full = f"{path}::{name}"
            old = found.get(str(target))
            if old is None or (full.count("::"), full) < (old.count("::"), old):
                found[str(target)] = full
            if "module" in t["inner"]:
                visit(target, full, seen | {mid})

    visit(doc["root"], CRATE, frozenset())
    return found


def render(doc):
    api = Api(doc)
    api.public_paths = public_paths(doc)
    api.walk_module(doc["root"], CRATE, frozenset())
    return sorted(api.lines)


def main():
    bless = "--bless" in sys.argv[1:]
    doc = build_json()
    lines = render(doc)
    text = "".join(line + "\n" for line in lines)
    if bless:
        with open(SNAPSHOT, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"wrote {os.path.relpath(SNAPSHOT, ROOT)}: {len(lines)} items")
        return 0
    try:
        with open(SNAPSHOT, encoding="utf-8") as f:
            want = f.read()
    except FileNotFoundError:
        want = ""
    if want == text:
        print(f"public API unchanged: {len(lines)} items as in {os.path.relpath(SNAPSHOT, ROOT)}")
        return 0
    sys.stdout.writelines(difflib.unified_diff(
        want.splitlines(keepends=True), text.splitlines(keepends=True),
        "api/public-api.txt (committed)", "public API (this tree)"))
    print("\nThe public API differs from api/public-api.txt (lines above: - removed, + added).\n"
          "If the change is meant, regenerate the snapshot and commit it with the change:\n"
          "    python3 api/public_api.py --bless\n"
          "A removed or changed line breaks callers: say so in CHANGELOG.md.")
    return 1


if __name__ == "__main__":
    sys.exit(main())
