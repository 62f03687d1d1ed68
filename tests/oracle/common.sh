# common.sh - what tests/oracle/setup.sh (x86-64) and tests/oracle/arm64/setup.sh
# share: the pinned versions, npm's failures explained, llama.cpp's source tree
# from the bundle inside node-llama-cpp, and the extraction of its headers.
# Sourced; the caller defines die MSG and LOG (the setup log) first.

NLC_VERSION=3.22.1
LLAMA_RELEASE=v0.5.0
LLAMA_COMMIT=de3ff815ea7d559ee917f063901b8986f038abc6
SRC_PKG="node-llama-cpp"
# What the headers' VERSION file says; a copy with another text is stale.
HDR_VERSION="$LLAMA_RELEASE $LLAMA_COMMIT (node-llama-cpp $NLC_VERSION)"
NPM_FLAGS=(--no-audit --no-fund --loglevel=error --ignore-scripts)

# Dies with the cause of an npm failure, read from the log.
npm_fail() {
    local what=$1
    if grep -Eq 'ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH|network|socket hang up|self.signed|CERT' "$LOG"; then
        die "$what failed: npm registry unreachable (see $LOG)"
    elif grep -Eq 'E404|404 Not Found|ETARGET|notarget' "$LOG"; then
        die "$what failed: package version not found on the npm registry (see $LOG)"
    elif grep -Eq 'EBADPLATFORM|EBADENGINE' "$LOG"; then
        die "$what failed: npm refused the package on this platform (see $LOG)"
    else
        die "$what failed (see $LOG): $(tail -n 3 "$LOG" | tr '\n' ' ')"
    fi
}

# install_prebuilt PKG PREFIX BINS NAME [FILE...]: npm-installs PKG@NLC_VERSION
# under PREFIX (its package.json named NAME), again with --force when npm
# refuses the platform (a package's "cpu"/"os" fields may refuse an x86-64
# host for the arm64 one); then BINS must hold llama.cpp's libraries, build
# metadata naming LLAMA_RELEASE, and every FILE.
install_prebuilt() {
    local pkg=$1 prefix=$2 bins=$3 name=$4 f
    shift 4
    mkdir -p "$prefix"
    [ -f "$prefix/package.json" ] || printf '{"name":"%s","private":true}\n' "$name" >"$prefix/package.json"
    if ! npm install -E --prefix "$prefix" "${NPM_FLAGS[@]}" "$pkg@$NLC_VERSION" >>"$LOG" 2>&1; then
        if grep -Eq 'EBADPLATFORM' "$LOG"; then
            npm install -E --force --prefix "$prefix" "${NPM_FLAGS[@]}" "$pkg@$NLC_VERSION" >>"$LOG" 2>&1 ||
                npm_fail "npm install --force $pkg@$NLC_VERSION"
        else
            npm_fail "npm install $pkg@$NLC_VERSION"
        fi
    fi
    for f in "libllama.$LLAMA_RELEASE.so" "libggml.$LLAMA_RELEASE.so" libggml-base.so _nlcBuildMetadata.json "$@"; do
        [ -f "$bins/$f" ] || die "$pkg@$NLC_VERSION installed but $bins/$f is missing"
    done
    grep -q "\"release\":\"$LLAMA_RELEASE\"" "$bins/_nlcBuildMetadata.json" ||
        die "$bins/_nlcBuildMetadata.json does not name llama.cpp release $LLAMA_RELEASE"
}

# install_source DIR: makes DIR/llama.git (stamped, so done once), a bare git
# repository holding llama.cpp's whole source tree at LLAMA_COMMIT, fetched
# from the bundle inside node-llama-cpp@NLC_VERSION (release LLAMA_RELEASE is
# checked).  Read it with source_tree, or `git --git-dir=DIR/llama.git`.
install_source() {
    local dir=$1 stamp="$1/.stamp-source-$NLC_VERSION" tmp="$1/tmp-source" tgz head
    [ -f "$stamp" ] && git --git-dir="$dir/llama.git" cat-file -e "$LLAMA_COMMIT^{commit}" 2>/dev/null && return 0
    command -v git >/dev/null 2>&1 || die "git not found in PATH (needed to read the llama.cpp source bundle)"
    rm -f "$stamp"
    rm -rf "$tmp" "$dir/llama.git"
    mkdir -p "$tmp"
    if ! (cd "$tmp" && npm pack "${NPM_FLAGS[@]}" "$SRC_PKG@$NLC_VERSION") >>"$LOG" 2>&1; then
        npm_fail "npm pack $SRC_PKG@$NLC_VERSION"
    fi
    tgz="$tmp/$SRC_PKG-$NLC_VERSION.tgz"
    [ -f "$tgz" ] || die "npm pack did not produce $tgz"
    tar -xzf "$tgz" -C "$tmp" package/llama/gitRelease.bundle package/llama/binariesGithubRelease.json >>"$LOG" 2>&1 ||
        die "$tgz lacks package/llama/gitRelease.bundle or binariesGithubRelease.json"
    rm -f "$tgz"
    grep -Eq "\"release\"[[:space:]]*:[[:space:]]*\"$LLAMA_RELEASE\"" "$tmp/package/llama/binariesGithubRelease.json" ||
        die "$SRC_PKG@$NLC_VERSION: binariesGithubRelease.json does not say $LLAMA_RELEASE"
    git -c init.defaultBranch=main init -q --bare "$tmp/llama.git" >>"$LOG" 2>&1 || die "git init failed"
    git --git-dir="$tmp/llama.git" fetch -q "$tmp/package/llama/gitRelease.bundle" HEAD >>"$LOG" 2>&1 ||
        die "git fetch from the llama.cpp source bundle failed (see $LOG)"
    head=$(git --git-dir="$tmp/llama.git" rev-parse FETCH_HEAD)
    [ "$head" = "$LLAMA_COMMIT" ] || die "llama.cpp bundle is at $head, expected $LLAMA_COMMIT"
    git --git-dir="$tmp/llama.git" tag "$LLAMA_RELEASE" "$LLAMA_COMMIT" >>"$LOG" 2>&1 || die "git tag failed"
    mv "$tmp/llama.git" "$dir/llama.git"
    rm -rf "$tmp"
    touch "$stamp"
}

# source_tree DIR OUT [PATH...]: writes the llama.cpp tree at LLAMA_COMMIT (or
# only the given paths) from DIR/llama.git into OUT (created).
source_tree() {
    local dir=$1 out=$2
    shift 2
    mkdir -p "$out" || die "cannot create $out"
    git --git-dir="$dir/llama.git" archive "$LLAMA_COMMIT" "$@" | tar -x -C "$out" ||
        die "extracting ${*:-the source tree} from $dir/llama.git failed"
}

# install_headers DIR [FROM]: makes DIR/hdr (stamped, so done once): a copy
# of FROM/hdr when that holds headers of HDR_VERSION, else extracted from the
# source tree (install_source).
install_headers() {
    local dir=$1 from=${2:-} stamp="$1/.stamp-headers-$NLC_VERSION" tmp="$1/tmp-headers" h
    [ -f "$stamp" ] && [ -f "$dir/hdr/include/llama.h" ] && return 0
    rm -f "$stamp"
    rm -rf "$tmp" "$dir/hdr"
    mkdir -p "$tmp"
    if [ -n "$from" ] && [ -f "$from/hdr/include/llama.h" ] &&
       [ "$(cat "$from/hdr/VERSION" 2>/dev/null || true)" = "$HDR_VERSION" ]; then
        cp -a "$from/hdr" "$tmp/hdr" || die "cannot copy headers from $from/hdr"
    else
        if [ -n "$from" ]; then
            printf '%s/hdr missing or not "%s"; extracting headers\n' "$from" "$HDR_VERSION" >>"$LOG"
        fi
        install_source "$dir"
        source_tree "$dir" "$tmp/hdr" include ggml/include ggml/src/ggml-backend-impl.h
        printf '%s\n' "$HDR_VERSION" >"$tmp/hdr/VERSION"
    fi
    for h in include/llama.h ggml/include/gguf.h ggml/include/ggml-backend.h ggml/src/ggml-backend-impl.h; do
        [ -f "$tmp/hdr/$h" ] || die "$h missing in the headers"
    done
    mv "$tmp/hdr" "$dir/hdr"
    rm -rf "$tmp"
    touch "$stamp"
}
