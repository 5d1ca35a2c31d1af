// The one way a class offers tests a seam: what a test may read or set on one live instance (given
// the instance runInDurableObject hands it), in place of casts to private members or prototype
// patches. The seam is kept beside the instance, not as a member, so no stub reaches it over RPC;
// production code reads a field of it only where that field's comment says.

export interface TestSeams<Owner extends object, Seam> {
  /** Keeps `seam` as `owner`'s (in its constructor) and gives it back. */
  attach(owner: Owner, seam: Seam): Seam;
  /** `owner`'s seam; throws for anything that is not a live instance of the class. */
  of(owner: Owner): Seam;
  /** `owner`'s seam if it has one. */
  find(owner: Owner): Seam | undefined;
}

/** The seams of one class, named `what` in the error a wrong instance gets. */
export function testSeams<Owner extends object, Seam>(what: string): TestSeams<Owner, Seam> {
  const seams = new WeakMap<Owner, Seam>();
  return {
    attach(owner, seam) {
      seams.set(owner, seam);
      return seam;
    },
    of(owner) {
      const seam = seams.get(owner);
      if (!seam) throw new Error(`not a live ${what}`);
      return seam;
    },
    find: (owner) => seams.get(owner),
  };
}
