package main

// icon is the CSV's icon: a globe with three weighted paths, as SVG.
const icon = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64"><circle cx="32" cy="32" r="28" fill="#1f6feb"/><path d="M4 32h56M32 4c-9 8-9 48 0 56M32 4c9 8 9 48 0 56" stroke="#fff" stroke-width="3" fill="none"/></svg>`
